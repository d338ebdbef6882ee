"""Reference solutions of the self-attention course (hidden from students)."""
