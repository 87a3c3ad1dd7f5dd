"""The summarizing stages in the order the pipeline tries them."""
from __future__ import annotations

from compaction.layers.autocompact import AutoCompactStage
from compaction.layer_context import CompactionStage
from compaction.reinject import ReadFile
from compaction.layers.session_memory import SessionMemoryStage
from compaction.summarizer import Summarizer
from compaction.summarizing import SummarizeConfig


def default_stages(summarizer: Summarizer, config: SummarizeConfig | None = None,
                   read_file: ReadFile | None = None) -> list[CompactionStage]:
    """The summarizing stages in pipeline order: session memory (cheap, no model call), then LLM
    compaction. `read_file(path) -> str | None` (sync or async) returns a file's current contents
    for re-attachment; without it the contents as last read are used."""
    config = config or SummarizeConfig()
    stages: list[CompactionStage] = []
    if config.session_memory:
        stages.append(SessionMemoryStage(config, read_file))
    stages.append(AutoCompactStage(summarizer, config, read_file))
    return stages
