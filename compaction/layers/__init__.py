"""The compaction layers, one module each, in the order the pipeline runs them."""
