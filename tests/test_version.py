"""The version has one source (agent_core/version.py): what the installed package says is what a
session file and `--version` say."""
from importlib.metadata import version

from agent_core.version import __version__


def test_the_package_metadata_reads_the_version_module():
    assert version("ctxtui") == __version__
