/* aimux_ops._speedups._cchunks: the common stream chunk (a text delta) of the providers, read in C.
 *
 * An optional accelerator of aimux_ops/providers/openai.py:_read_events (docs/DESIGN.md "Stream
 * chunks in C"). The Python loop stays the reference: read_openai walks one read's SSE events from
 * a start index while each is a plain text chunk, appends its {"type": "text-delta", "text": ...}
 * event (the dict the Python loop makes, same key order), and stops at the first event that is
 * anything else, which it hands back unconsumed (with the object it parsed, so nothing is parsed
 * twice); the Python loop reads that one and calls again after it. A plain text chunk is exactly:
 *
 * - an unnamed event, or one whose name is a str other than "error"; data of exact bytes, not
 *   "[DONE]", that the given loads (orjson.loads) parses to an exact dict;
 * - no "error" key, or "error": null; when the stream's metadata is not seen yet, no truthy "id",
 *   "model" or "created" (the Python loop records those);
 * - "choices" an exact non-empty list whose [0] is an exact dict, its "delta" an exact dict whose
 *   "content" is a non-empty exact str and whose "refusal", "tool_calls", "reasoning_content",
 *   "reasoning" and "annotations" are absent, null or falsy (the Python loop skips them then);
 *   the choice's "finish_reason" absent or null;
 * - the chunk's "usage" absent or null.
 *
 * Other keys of the chunk, the choice and the delta ("object", "system_fingerprint",
 * "service_tier", "obfuscation", "index", "logprobs", the delta's "role" that Ollama repeats in
 * every chunk, "reasoning_content": null, ...) are ignored, as the Python loop ignores them.
 *
 * read_anthropic does the same for aimux_ops/providers/anthropic.py:_read_events and Anthropic's
 * content block deltas: data of exact bytes that loads parses to an exact dict whose "type" is
 * "content_block_delta" and whose "delta" is an exact dict with a "type" exact str that is
 * - "text_delta", with "text" an exact str: its text-delta event (an empty one appends nothing,
 *   as in Python);
 * - anything else but "input_json_delta" (thinking, signature, citations, compaction, ...):
 *   handed back to the Python loop;
 * - "input_json_delta", with "partial_json" an exact str and the frame's "index" an exact int,
 *   given the stream's tool state (json_blocks, tool_calls): the JSON tool's text, or the piece
 *   added to the tool call's input (input_json); without the tool state it is handed back.
 * The event name is not read: the Python loop looks at it only for frames of another type.
 * Other keys are ignored.
 *
 * For both: a data loads rejects with a ValueError (orjson.JSONDecodeError) is handed back
 * unparsed (the Python loop parses it again and raises its own error); any other exception from
 * loads propagates (the Python loop would not catch it either). The events appended before a
 * hand-back or an exception stay in `out`: they are delivered before the failure, as the Python
 * loop delivers them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#ifndef AIMUX_CCHUNKS_SOURCE_SHA
#define AIMUX_CCHUNKS_SOURCE_SHA ""
#endif

/* Interned keys and values. */
static PyObject *s_error, *s_id, *s_model, *s_created, *s_choices, *s_delta, *s_content,
    *s_finish_reason, *s_usage, *s_type, *s_text, *s_text_delta, *s_content_block_delta,
    *s_text_delta_type, *s_refusal, *s_tool_calls, *s_input_json_delta, *s_partial_json, *s_index,
    *s_reasoning_content, *s_reasoning, *s_annotations;

/* The marker of a handed-back event that was not parsed (JSON never parses to it). */
static PyObject *g_unparsed;

/* The dict loads makes of data (exact bytes): 1 and *parsed the dict; 0 and *parsed NULL (a
 * ValueError, cleared) or another object (a new reference); -1: an error is set. */
static int parse(PyObject *data, PyObject *loads, PyObject **parsed)
{
    Py_INCREF(data);
    PyObject *chunk = PyObject_CallOneArg(loads, data);
    Py_DECREF(data);
    if (chunk == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_ValueError)) return -1;
        PyErr_Clear();
        return 0;
    }
    *parsed = chunk;
    return PyDict_CheckExact(chunk) ? 1 : 0;
}

/* Append {"type": "text-delta", "text": text} to out (0, or -1 with an error set). */
static int append_text(PyObject *out, PyObject *text)
{
    PyObject *event = _PyDict_NewPresized(2);
    int failed = event == NULL || PyDict_SetItem(event, s_type, s_text_delta) < 0 ||
                 PyDict_SetItem(event, s_text, text) < 0 || PyList_Append(out, event) < 0;
    Py_XDECREF(event);
    return failed ? -1 : 0;
}

/* 1: dict[key] is absent, null or falsy (what the Python loop's `if value:` skips); 0: it is
 * truthy; -1: an error is set. */
static int falsy_at(PyObject *dict, PyObject *key)
{
    PyObject *value = PyDict_GetItemWithError(dict, key);
    if (value == NULL) return PyErr_Occurred() ? -1 : 1;
    if (value == Py_None) return 1;
    int truth = PyObject_IsTrue(value);
    return truth < 0 ? -1 : !truth;
}

/* 1: the event is a plain text chunk, *text its content (borrowed from *parsed); 0: hand it
 * back, *parsed the parsed chunk (a new reference) or NULL when it was not parsed; -1: an error
 * is set. */
static int plain_text(PyObject *data, PyObject *loads, int seen, PyObject **parsed, PyObject **text)
{
    *parsed = NULL;
    if (!PyBytes_CheckExact(data)) return 0;
    if (PyBytes_GET_SIZE(data) == 6 && memcmp(PyBytes_AS_STRING(data), "[DONE]", 6) == 0) return 0;
    int got = parse(data, loads, parsed);
    if (got <= 0) return got;
    PyObject *chunk = *parsed;
    PyObject *value = PyDict_GetItemWithError(chunk, s_error);
    if (value != NULL && value != Py_None) return 0;
    if (value == NULL && PyErr_Occurred()) return -1;
    if (!seen) {
        PyObject *keys[] = {s_id, s_model, s_created};
        for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
            value = PyDict_GetItemWithError(chunk, keys[k]);
            if (value == NULL) {
                if (PyErr_Occurred()) return -1;
                continue;
            }
            int truth = PyObject_IsTrue(value);
            if (truth < 0) return -1;
            if (truth) return 0; /* metadata: the Python loop records it */
        }
    }
    PyObject *choices = PyDict_GetItemWithError(chunk, s_choices);
    if (choices == NULL || !PyList_CheckExact(choices) || PyList_GET_SIZE(choices) == 0)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *choice = PyList_GET_ITEM(choices, 0);
    if (!PyDict_CheckExact(choice)) return 0;
    PyObject *delta = PyDict_GetItemWithError(choice, s_delta);
    if (delta == NULL || !PyDict_CheckExact(delta)) return PyErr_Occurred() ? -1 : 0;
    PyObject *content = PyDict_GetItemWithError(delta, s_content);
    if (content == NULL || !PyUnicode_CheckExact(content) || PyUnicode_GET_LENGTH(content) == 0)
        return PyErr_Occurred() ? -1 : 0;
    if (PyDict_GET_SIZE(delta) != 1) {
        /* other keys ("role", ...): the Python loop reads only "refusal", "tool_calls",
         * "reasoning_content", "reasoning" and "annotations" of them, and does nothing when all
         * are falsy */
        int falsy = falsy_at(delta, s_refusal);
        if (falsy <= 0) return falsy;
        falsy = falsy_at(delta, s_tool_calls);
        if (falsy <= 0) return falsy;
        falsy = falsy_at(delta, s_reasoning_content);
        if (falsy <= 0) return falsy;
        falsy = falsy_at(delta, s_reasoning);
        if (falsy <= 0) return falsy;
        falsy = falsy_at(delta, s_annotations);
        if (falsy <= 0) return falsy;
    }
    value = PyDict_GetItemWithError(choice, s_finish_reason);
    if (value != NULL && value != Py_None) return 0;
    if (value == NULL && PyErr_Occurred()) return -1;
    value = PyDict_GetItemWithError(chunk, s_usage);
    if (value != NULL && value != Py_None) return 0;
    if (value == NULL && PyErr_Occurred()) return -1;
    *text = content;
    return 1;
}

/* A name that lets the Python loop treat the event as unnamed: None, or a str other than
 * "error". */
static int plain_name(PyObject *name)
{
    if (name == Py_None) return 1;
    return PyUnicode_CheckExact(name) && PyUnicode_CompareWithASCIIString(name, "error") != 0;
}

static PyObject *handed_back(Py_ssize_t index, PyObject *parsed)
{
    PyObject *result = Py_BuildValue("(nO)", index, parsed != NULL ? parsed : g_unparsed);
    Py_XDECREF(parsed);
    return result;
}

PyDoc_STRVAR(read_openai_doc,
             "read_openai(datas, names, out, loads, start, seen, /) -> (index, parsed)\n\n"
             "Append the text-delta events of the plain text chunks datas[start:] begins with to\n"
             "out; (len(datas), UNPARSED) when every one was, else the index of the first other\n"
             "event and its parsed chunk (UNPARSED when it was not parsed). seen: the stream's\n"
             "metadata (id, model) was recorded already.");

static PyObject *read_openai(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "read_openai() takes exactly 6 arguments");
        return NULL;
    }
    PyObject *datas = args[0], *names = args[1], *out = args[2], *loads = args[3];
    if (!PyList_CheckExact(datas) || !PyList_CheckExact(out) ||
        (names != Py_None && !PyList_CheckExact(names))) {
        PyErr_SetString(PyExc_TypeError, "read_openai(): datas, names and out must be lists");
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[4]);
    if (start == -1 && PyErr_Occurred()) return NULL;
    int seen = PyObject_IsTrue(args[5]);
    if (seen < 0) return NULL;
    if (start < 0) start = 0;
    for (Py_ssize_t i = start; i < PyList_GET_SIZE(datas); i++) {
        if (names != Py_None &&
            (i >= PyList_GET_SIZE(names) || !plain_name(PyList_GET_ITEM(names, i))))
            return handed_back(i, NULL);
        PyObject *parsed, *text = NULL;
        int plain = plain_text(PyList_GET_ITEM(datas, i), loads, seen, &parsed, &text);
        if (plain < 0) {
            Py_XDECREF(parsed);
            return NULL;
        }
        if (plain == 0) return handed_back(i, parsed);
        int failed = append_text(out, text);
        Py_DECREF(parsed);
        if (failed) return NULL;
    }
    return handed_back(PyList_GET_SIZE(datas), NULL);
}

/* An input_json_delta whose "partial_json" is the exact str piece, for aimux_ops/providers/
 * anthropic.py:_read_events's tool state: 1 and *text the piece when the block's "index" (an exact
 * int) is in json_blocks (the JSON tool's input is the text); 1 and *text NULL after the piece is
 * appended to the tool call's input (tool_calls[index][2], an exact str) or when the block is no
 * tool of ours; 0: hand it back; -1: an error is set. */
static int input_json(PyObject *frame, PyObject *piece, PyObject *json_blocks, PyObject *tool_calls,
                      PyObject **text)
{
    PyObject *index = PyDict_GetItemWithError(frame, s_index);
    if (index == NULL || !PyLong_CheckExact(index)) return PyErr_Occurred() ? -1 : 0;
    int json = PySet_Contains(json_blocks, index);
    if (json < 0) return -1;
    if (json) {
        *text = piece;
        return 1;
    }
    *text = NULL;
    PyObject *slot = PyDict_GetItemWithError(tool_calls, index);
    if (slot == NULL) return PyErr_Occurred() ? -1 : 1; /* a server tool's input: not ours */
    if (!PyList_CheckExact(slot) || PyList_GET_SIZE(slot) < 3 ||
        !PyUnicode_CheckExact(PyList_GET_ITEM(slot, 2)))
        return 0;
    PyObject *joined = PyUnicode_Concat(PyList_GET_ITEM(slot, 2), piece);
    if (joined == NULL) return -1;
    PyList_SetItem(slot, 2, joined); /* steals joined, releases the old input */
    return 1;
}

/* 1: the frame is a text delta, *text its text (borrowed from *parsed); or (json_blocks not
 * NULL) an input_json_delta read as input_json does, *text its JSON tool text or NULL; 0: hand it
 * back, *parsed the parsed frame (a new reference) or NULL when it was not parsed; -1: an error is
 * set. */
static int text_delta(PyObject *data, PyObject *loads, PyObject *json_blocks, PyObject *tool_calls,
                      PyObject **parsed, PyObject **text)
{
    *parsed = NULL;
    if (!PyBytes_CheckExact(data)) return 0;
    int got = parse(data, loads, parsed);
    if (got <= 0) return got;
    PyObject *frame = *parsed;
    PyObject *kind = PyDict_GetItemWithError(frame, s_type);
    if (kind == NULL || !PyUnicode_CheckExact(kind) ||
        PyUnicode_Compare(kind, s_content_block_delta) != 0)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *delta = PyDict_GetItemWithError(frame, s_delta);
    if (delta == NULL || !PyDict_CheckExact(delta)) return PyErr_Occurred() ? -1 : 0;
    PyObject *dtype = PyDict_GetItemWithError(delta, s_type);
    if (dtype == NULL || !PyUnicode_CheckExact(dtype)) return PyErr_Occurred() ? -1 : 0;
    PyObject *value;
    if (PyUnicode_Compare(dtype, s_text_delta_type) != 0) {
        /* reasoning, citations, compaction, ...: the Python loop's */
        if (PyUnicode_Compare(dtype, s_input_json_delta) != 0) return 0;
        if (json_blocks == NULL) return 0;
        value = PyDict_GetItemWithError(delta, s_partial_json);
        if (value == NULL || !PyUnicode_CheckExact(value)) return PyErr_Occurred() ? -1 : 0;
        return input_json(frame, value, json_blocks, tool_calls, text);
    }
    value = PyDict_GetItemWithError(delta, s_text);
    if (value == NULL || !PyUnicode_CheckExact(value)) return PyErr_Occurred() ? -1 : 0;
    *text = value;
    return 1;
}

PyDoc_STRVAR(read_anthropic_doc,
             "read_anthropic(datas, out, loads, start, json_blocks=None, tool_calls=None, /)\n"
             "    -> (index, parsed)\n\n"
             "read_openai for Anthropic's content block deltas: a text_delta appends its text\n"
             "(an empty one nothing); with the stream's json_blocks (a set) and\n"
             "tool_calls (a dict), an input_json_delta appends its piece (a JSON tool's block)\n"
             "or adds it to the tool call's input, else it is handed back. The event names are\n"
             "not read.");

static PyObject *read_anthropic(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 4 && nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "read_anthropic() takes 4 or 6 arguments");
        return NULL;
    }
    PyObject *datas = args[0], *out = args[1], *loads = args[2];
    PyObject *json_blocks = nargs == 6 ? args[4] : Py_None;
    PyObject *tool_calls = nargs == 6 ? args[5] : Py_None;
    if (!PyList_CheckExact(datas) || !PyList_CheckExact(out)) {
        PyErr_SetString(PyExc_TypeError, "read_anthropic(): datas and out must be lists");
        return NULL;
    }
    if ((json_blocks == Py_None) != (tool_calls == Py_None) ||
        (json_blocks != Py_None &&
         (!PySet_CheckExact(json_blocks) || !PyDict_CheckExact(tool_calls)))) {
        PyErr_SetString(PyExc_TypeError,
                        "read_anthropic(): json_blocks and tool_calls must be a set and a dict");
        return NULL;
    }
    if (json_blocks == Py_None) json_blocks = tool_calls = NULL;
    Py_ssize_t start = PyLong_AsSsize_t(args[3]);
    if (start == -1 && PyErr_Occurred()) return NULL;
    if (start < 0) start = 0;
    for (Py_ssize_t i = start; i < PyList_GET_SIZE(datas); i++) {
        PyObject *parsed, *text = NULL;
        int plain =
            text_delta(PyList_GET_ITEM(datas, i), loads, json_blocks, tool_calls, &parsed, &text);
        if (plain < 0) {
            Py_XDECREF(parsed);
            return NULL;
        }
        if (plain == 0) return handed_back(i, parsed);
        int failed = text != NULL && PyUnicode_GET_LENGTH(text) > 0 ? append_text(out, text) : 0;
        Py_DECREF(parsed);
        if (failed) return NULL;
    }
    return handed_back(PyList_GET_SIZE(datas), NULL);
}

static PyMethodDef methods[] = {
    {"read_openai", (PyCFunction)(void (*)(void))read_openai, METH_FASTCALL, read_openai_doc},
    {"read_anthropic", (PyCFunction)(void (*)(void))read_anthropic, METH_FASTCALL,
     read_anthropic_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT,
    .m_name = "aimux_ops._speedups._cchunks",
    .m_doc = "The common stream chunk of the providers, read in C (optional; the providers' "
             "_read_events are the reference).",
    .m_size = -1,
    .m_methods = methods,
};

static int intern_all(void)
{
    struct {
        PyObject **slot;
        const char *text;
    } names[] = {
        {&s_error, "error"},
        {&s_id, "id"},
        {&s_model, "model"},
        {&s_created, "created"},
        {&s_choices, "choices"},
        {&s_delta, "delta"},
        {&s_content, "content"},
        {&s_finish_reason, "finish_reason"},
        {&s_usage, "usage"},
        {&s_type, "type"},
        {&s_text, "text"},
        {&s_text_delta, "text-delta"},
        {&s_content_block_delta, "content_block_delta"},
        {&s_text_delta_type, "text_delta"},
        {&s_refusal, "refusal"},
        {&s_tool_calls, "tool_calls"},
        {&s_input_json_delta, "input_json_delta"},
        {&s_partial_json, "partial_json"},
        {&s_index, "index"},
        {&s_reasoning_content, "reasoning_content"},
        {&s_reasoning, "reasoning"},
        {&s_annotations, "annotations"},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (*names[i].slot == NULL) {
            *names[i].slot = PyUnicode_InternFromString(names[i].text);
            if (*names[i].slot == NULL) return -1;
        }
    }
    return 0;
}

PyMODINIT_FUNC PyInit__cchunks(void)
{
    if (intern_all() < 0) return NULL;
    if (g_unparsed == NULL) {
        g_unparsed = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
        if (g_unparsed == NULL) return NULL;
    }
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL) return NULL;
    if (PyModule_AddStringConstant(m, "SOURCE_SHA", AIMUX_CCHUNKS_SOURCE_SHA) < 0 ||
        PyModule_AddObjectRef(m, "UNPARSED", g_unparsed) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
