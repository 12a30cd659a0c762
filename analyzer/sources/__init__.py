"""One module per input format: each turns text or bytes into typed records with (file, line)."""
