"""`agency report`: one self-contained HTML file of plots about the loop (data, then rendering)."""
