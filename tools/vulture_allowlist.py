"""What vulture cannot see used (tools/check_size.py), one reason each."""
