"""The ``dw`` command line. ``main.py`` holds the group; one module per family of commands."""
