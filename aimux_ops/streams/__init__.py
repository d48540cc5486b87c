"""The stream engine: the one way a stream runs for the Python API, the blocking C API and the
event-driven C API (``stream``: the stream classes and how each is read; ``registry``: handles,
the reaper, the reader threads' limit; ``ready``: the ready list and its pipe; ``cqueue``: the C
queues of libaimux). It never imports the boundary (``dispatch``): the boundary hands it the op's
events and context.
"""
