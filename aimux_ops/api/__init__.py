"""The Python binding's API beyond ``call`` and ``stream``: host tools (``tools``)."""
