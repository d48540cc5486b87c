"""The boundary the shim and the Python API call: op dispatch and the stream entry points."""
