/* libaimux: the values the C queue of a stream (aimux_queue.c) and the Python core share, defined
 * here once. The C side includes this file; the cffi build (native/build_libaimux.py) puts it in
 * front of aimux_cdef.h, so the core reads each as lib.<NAME> (aimux_ops/streams/): no copy.
 * Only enums here (cffi's cdef parser reads it too): no preprocessor lines, no include guard. */

/* a queue's flags (_aimux_cq_flag, _aimux_cq_unflag, _aimux_cq_flags) */
enum _aimux_q_flag {
    _AIMUX_Q_END = 1,     /* the producer ended; everything it made is in this queue */
    _AIMUX_Q_PY = 2,      /* once this queue is empty, the Python side answers */
    _AIMUX_Q_CANCEL = 4,  /* cancelled (or freed): the end, at once */
    _AIMUX_Q_STOPPED = 8, /* the producer is over (the op's cleanup ran) */
    _AIMUX_Q_DONE = 16,   /* a consumer saw the end */
    _AIMUX_Q_ROOM = 32,   /* the producer waits for the queue to drop to the low-water mark */
    _AIMUX_Q_PULL = 64,   /* read by its reader: once empty, a blocking read asks Python to read */
    _AIMUX_Q_BLOCKED = 128, /* a blocking read came: a poll of an empty PULL queue is EMPTY */
    _AIMUX_Q_FREED = 256    /* freed: never listed on the ready list again */
};

/* _aimux_cq_take's answers */
enum _aimux_q_take {
    _AIMUX_T_DATA = 0,  /* *out: one event, or a JSON array of events */
    _AIMUX_T_END = 1,   /* the stream is over (*out NULL) */
    _AIMUX_T_EMPTY = 2, /* nothing yet (non-blocking only) */
    _AIMUX_T_PY = 3,    /* ask the Python side */
    _AIMUX_T_OOM = 4
};

/* *wake of _aimux_cq_take: what the caller must tell the Python side once it holds no lock */
enum _aimux_q_wake {
    _AIMUX_W_ROOM = 1,  /* the producer may go on (the queue dropped to the low-water mark) */
    _AIMUX_W_RELIST = 2 /* an event-driven stream kept events after a batch: list it again */
};
