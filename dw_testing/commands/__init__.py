"""``dw`` commands that dw_testing adds through the ``dw.commands`` entry points."""
