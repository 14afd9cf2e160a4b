"""What a store author uses in their own tests; re-exported by :mod:`dw_testing`."""
