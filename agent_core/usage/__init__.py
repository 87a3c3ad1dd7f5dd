"""`ctxtui usage`: token and cost reports over session logs."""
