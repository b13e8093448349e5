"""Paper figures and tables as code: each writes its numbers and a PNG."""
