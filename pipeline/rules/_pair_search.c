/* The inner loops of the subject-pair search, in C (issue 14, item 2).

   Each function here is the C form of a Python function that stays the reference and the fallback:

     significant_tuples    text.significant_tuples             (one step per word of a text)
     document_frequencies  subject_pairs.document_frequencies  (one step per word of a memory)
     hot_signatures        hot_subjects.hot_signatures         (one step per word of a memory)
     bucket_neighbours     hot_subjects.bucket_neighbours      (one step per filing of a hot subject)
     scored_pairs          subject_pairs.scored_pairs          (one step per candidate pair)

   They take and give the same values and give them in the same order; tests/test_pair_search_native.py
   compares each with its reference on random inputs. native.py says which one runs. Nothing here
   reads or writes anything but its arguments and what it returns.

   Why C: on a bank of 50k memories whose every word is hot, these loops are most of what the
   stub's plan costs beyond `--model none`'s, and CPython had been brought to its floor for them
   (the closing notes of issue 14 list what was measured). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The inputs are read as the pipeline makes them: tuples of exact str (a memory's words), a frozenset
   of str, tuples of exact ints, dicts of str. Anything else is refused before any of it is read, so no Python code (an __eq__, __hash__,
   __index__ or __iter__ of the caller's) runs while a borrowed reference is held. A list is read
   through a tuple made of it at the start, which holds its items for the whole call. */

/* A memory's words: an exact tuple (its items then read one by one as exact str). */
static int
exact_words(PyObject *words)
{
    if (PyTuple_CheckExact(words))
        return 1;
    PyErr_SetString(PyExc_TypeError, "a memory's words are a tuple");
    return 0;
}

/* Whether every member of `set` (or every key of a dict, and every value of type `values` unless it
   is NULL) is an exact str; 0 with a TypeError else. */
static int
all_str(PyObject *container, PyTypeObject *values)
{
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    Py_hash_t hash;
    if (PyDict_Check(container)) {
        while (PyDict_Next(container, &pos, &key, &value))
            if (!PyUnicode_CheckExact(key) || (values != NULL && Py_TYPE(value) != values)) {
                PyErr_SetString(PyExc_TypeError, values != NULL ? "values of the wrong type by str" : "words are str");
                return 0;
            }
        return 1;
    }
#if PY_VERSION_HEX < 0x030D0000
    while (_PySet_NextEntry(container, &pos, &key, &hash))
        if (!PyUnicode_CheckExact(key)) {
            PyErr_SetString(PyExc_TypeError, "words are str");
            return 0;
        }
#else
    (void)hash;
    PyObject *it = PyObject_GetIter(container); /* an exact set's: no Python code */
    if (it == NULL)
        return 0;
    while ((key = PyIter_Next(it)) != NULL) {
        int ok = PyUnicode_CheckExact(key);
        Py_DECREF(key);
        if (!ok) {
            Py_DECREF(it);
            PyErr_SetString(PyExc_TypeError, "words are str");
            return 0;
        }
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        return 0;
#endif
    return 1;
}

/* Words by a hash (open addressing, linear probes), each with a number its user keeps for it: the
   words met in ASCII text (whether it is left out), the words of memories (the order they were met). */
typedef struct {
    uint64_t hash;
    PyObject *word; /* NULL: an empty slot */
    int32_t value;
    Py_ssize_t last_text; /* significant_tuples: the last text that gave it, + 1 (each word once a text) */
} Word_slot;

typedef struct {
    Word_slot *slots;
    size_t mask;
    size_t count;
} Word_table;

static int
word_table_init(Word_table *table, size_t size)
{
    table->slots = PyMem_Calloc(size, sizeof(Word_slot));
    table->mask = size - 1;
    table->count = 0;
    if (table->slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* Frees the table, and its words when it owns them. */
static void
word_table_free(Word_table *table, int owned)
{
    if (owned && table->slots != NULL)
        for (size_t s = 0; s <= table->mask; s++)
            Py_XDECREF(table->slots[s].word);
    PyMem_Free(table->slots);
    table->slots = NULL;
}

/* Twice the slots, when half are taken (call before adding a word). */
static int
word_table_make_room(Word_table *table)
{
    if (table->count * 2 < table->mask)
        return 0;
    size_t size = (table->mask + 1) * 2;
    Word_slot *slots = PyMem_Calloc(size, sizeof(Word_slot));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t s = 0; s <= table->mask; s++) {
        Word_slot *old = &table->slots[s];
        if (old->word == NULL)
            continue;
        size_t at = (size_t)old->hash & (size - 1);
        while (slots[at].word != NULL)
            at = (at + 1) & (size - 1);
        slots[at] = *old;
    }
    PyMem_Free(table->slots);
    table->slots = slots;
    table->mask = size - 1;
    return 0;
}

/* ---- significant_tuples --------------------------------------------------------------------- */

static uint64_t
bytes_hash(const Py_UCS1 *at, Py_ssize_t len)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (Py_ssize_t i = 0; i < len; i++) {
        h ^= at[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* The word at `at` (ASCII, `len` bytes), interned, as a slot of `seen` (which owns its words; the
   slot's value: whether `leave_out` holds it); NULL with an exception set. */
static Word_slot *
seen_word(Word_table *seen, const Py_UCS1 *at, Py_ssize_t len, PyObject *leave_out)
{
    if (word_table_make_room(seen) < 0)
        return NULL;
    uint64_t h = bytes_hash(at, len);
    size_t s = (size_t)h & seen->mask;
    for (;;) {
        Word_slot *slot = &seen->slots[s];
        if (slot->word == NULL)
            break;
        if (slot->hash == h && PyUnicode_GET_LENGTH(slot->word) == len &&
            memcmp(PyUnicode_1BYTE_DATA(slot->word), at, (size_t)len) == 0)
            return slot;
        s = (s + 1) & seen->mask;
    }
    PyObject *word = PyUnicode_DecodeASCII((const char *)at, len, NULL);
    if (word == NULL)
        return NULL;
    PyUnicode_InternInPlace(&word);
    int left_out = PySet_Contains(leave_out, word);
    if (left_out < 0) {
        Py_DECREF(word);
        return NULL;
    }
    Word_slot *slot = &seen->slots[s];
    slot->hash = h;
    slot->word = word;
    slot->value = left_out;
    seen->count++;
    return slot;
}

/* Appends the slot's word to `found`, the words of text number `text`, unless this text gave it
   already (each word once a text). A tag's word goes through the same table (it is ASCII too), so it
   is interned, and taken once per text, as the text's own words are. */
static int
add_once(Word_slot *slot, Py_ssize_t text, PyObject ***found, Py_ssize_t *count, Py_ssize_t *room)
{
    if (slot->last_text == text + 1)
        return 0;
    slot->last_text = text + 1;
    if (*count == *room) {
        Py_ssize_t more = *room * 2;
        PyObject **grown = PyMem_Realloc(*found, sizeof(PyObject *) * (size_t)more);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        *found = grown;
        *room = more;
    }
    (*found)[(*count)++] = slot->word;
    return 0;
}

static PyObject *
significant_tuples(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *texts, *leave_out, *tags, *tag_word;
    if (!PyArg_ParseTuple(args, "O!O!O!O!", &PyList_Type, &texts, &PyFrozenSet_Type, &leave_out, &PyList_Type, &tags,
                          &PyDict_Type, &tag_word))
        return NULL;
    if (!PyFrozenSet_CheckExact(leave_out) || !all_str(leave_out, NULL)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "leave_out is a frozenset of str");
        return NULL;
    }
    /* The lists made tuples first: a list subclass's __iter__ is the caller's code, which may change
       what the checks below have passed. */
    if ((texts = PySequence_Tuple(texts)) == NULL)
        return NULL;
    if ((tags = PySequence_Tuple(tags)) == NULL) {
        Py_DECREF(texts);
        return NULL;
    }
    if (!PyDict_CheckExact(tag_word) || !all_str(tag_word, &PyUnicode_Type)) { /* a lookup: str with str */
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "tag_word is a dict of str by str");
        Py_DECREF(texts);
        Py_DECREF(tags);
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(texts), room = 64, count = 0;
    PyObject *out = NULL, *body_sizes = NULL, *result = NULL;
    PyObject **found = NULL; /* one text's words, each text in turn (borrowed from `seen`) */
    Word_table seen = {NULL, 0, 0};
    if (PyTuple_GET_SIZE(tags) != n) {
        PyErr_SetString(PyExc_ValueError, "tags for each text");
        goto done;
    }
    /* Every text's tags an exact list (or tuple) before any is read, so they are read by index; each
       tag is checked to be a str where it is read (below). */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *its = PyTuple_GET_ITEM(tags, i);
        if (!PyList_CheckExact(its) && !PyTuple_CheckExact(its)) {
            PyErr_SetString(PyExc_TypeError, "a text's tags are a list");
            goto done;
        }
    }
    if ((out = PyList_New(n)) == NULL || (body_sizes = PyList_New(n)) == NULL)
        goto done;
    found = PyMem_Malloc(sizeof(PyObject *) * (size_t)room);
    if (found == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (word_table_init(&seen, 4096) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *text = PyTuple_GET_ITEM(texts, i);
        if (!PyUnicode_Check(text)) {
            PyErr_SetString(PyExc_TypeError, "a text is a str");
            goto done;
        }
        if (!PyUnicode_IS_ASCII(text)) {
            PyErr_SetString(PyExc_ValueError, "a text of ASCII only");
            goto done;
        }
        const Py_UCS1 *data = PyUnicode_1BYTE_DATA(text);
        Py_ssize_t len = PyUnicode_GET_LENGTH(text), at = 0;
        count = 0;
        while (at < len) {
            /* str.split(): runs of anything but whitespace (ASCII's: space, \t\n\v\f\r, \x1c-\x1f) */
            while (at < len && Py_UNICODE_ISSPACE(data[at]))
                at++;
            Py_ssize_t start = at;
            while (at < len && !Py_UNICODE_ISSPACE(data[at]))
                at++;
            if (at == start)
                break;
            Word_slot *word = seen_word(&seen, &data[start], at - start, leave_out);
            if (word == NULL || (!word->value && add_once(word, i, &found, &count, &room) < 0))
                goto done;
        }
        PyObject *body_size = PyLong_FromSsize_t(count);
        if (body_size == NULL)
            goto done;
        PyList_SET_ITEM(body_sizes, i, body_size);
        PyObject *its = PyTuple_GET_ITEM(tags, i);
        /* The tag and its word held, and their types checked, where they are used: making a word
           allocates, and on 3.11 a collection there may run a finalizer that changes the lists or the
           dict (the size is read again each step for the same reason). */
        for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(its); j++) {
            PyObject *tag = Py_NewRef(PySequence_Fast_GET_ITEM(its, j)), *word = NULL;
            Word_slot *slot = NULL;
            if (!PyUnicode_CheckExact(tag))
                PyErr_SetString(PyExc_TypeError, "a tag is a str");
            else if ((word = Py_XNewRef(PyDict_GetItemWithError(tag_word, tag))) == NULL) {
                if (!PyErr_Occurred())
                    PyErr_SetObject(PyExc_KeyError, tag);
            } else if (!PyUnicode_CheckExact(word))
                PyErr_SetString(PyExc_TypeError, "tag_word is a dict of str by str");
            else if (!PyUnicode_IS_ASCII(word))
                PyErr_SetString(PyExc_ValueError, "a tag's word of ASCII only");
            else /* kept whether or not leave_out holds it: a tag's word is added to the text's, not filtered */
                slot = seen_word(&seen, PyUnicode_1BYTE_DATA(word), PyUnicode_GET_LENGTH(word), leave_out);
            int added = slot != NULL && add_once(slot, i, &found, &count, &room) == 0;
            Py_DECREF(tag);
            Py_XDECREF(word);
            if (!added)
                goto done;
        }
        PyObject *words = PyTuple_New(count);
        if (words == NULL)
            goto done;
        for (Py_ssize_t j = 0; j < count; j++) {
            Py_INCREF(found[j]);
            PyTuple_SET_ITEM(words, j, found[j]);
        }
        PyList_SET_ITEM(out, i, words);
    }
    result = PyTuple_Pack(2, out, body_sizes);

done:
    word_table_free(&seen, 1);
    PyMem_Free(found);
    Py_XDECREF(out);
    Py_XDECREF(body_sizes);
    Py_DECREF(texts);
    Py_DECREF(tags);
    return result;
}

/* ---- scored_pairs -------------------------------------------------------------------------- */

/* Each memory's words as numbers (the order words are first met in), each memory as a sorted run of
   numbers: `ids[start[i]:stop[i]]` is memory i. Two runs share as many numbers as their memories
   share words, and counting them by a merge reads 32 bytes of a memory's words, not a set's table
   and the words' own objects: on a bank of 50k memories the pairs' sets were 36 MB, read out of
   order, and the lookups in them were nine tenths of the scoring. Numbers follow equality, as a set's
   lookups do: two equal words that are not one object (not interned) have one number, and a word
   given twice is counted once. */
typedef struct {
    int32_t *ids;
    Py_ssize_t *start;
    Py_ssize_t *stop;
    Py_ssize_t count; /* of memories, as they were when read: a callback may change the list since */
} Runs;

static void
free_runs(Runs *runs)
{
    PyMem_Free(runs->ids);
    PyMem_Free(runs->start);
    PyMem_Free(runs->stop);
    runs->ids = NULL;
    runs->start = NULL;
    runs->stop = NULL;
}

/* The word's number in `vocabulary` (which borrows its words from the memories being read; matched by
   identity first, the search's words being interned, by equality else): a new one for a word not met
   before; -1 with an exception set. */
static int32_t
number_of(Word_table *vocabulary, PyObject *word, Py_hash_t hash)
{
    if (word_table_make_room(vocabulary) < 0)
        return -1;
    size_t at = (size_t)hash & vocabulary->mask;
    for (;;) {
        Word_slot *slot = &vocabulary->slots[at];
        if (slot->word == NULL)
            break;
        if (slot->word == word)
            return slot->value;
        if (slot->hash == (uint64_t)hash) {
            int equal = PyObject_RichCompareBool(slot->word, word, Py_EQ);
            if (equal < 0)
                return -1;
            if (equal)
                return slot->value;
        }
        at = (at + 1) & vocabulary->mask;
    }
    Word_slot *slot = &vocabulary->slots[at];
    slot->hash = (uint64_t)hash;
    slot->word = word;
    slot->value = (int32_t)vocabulary->count++;
    return slot->value;
}

/* The number of a memory's word (`number_of`), once it is known to be an exact str: numbering then
   compares str with str, and no Python code runs. -1 with an exception set. */
static int32_t
word_number(Word_table *vocabulary, PyObject *word)
{
    if (!PyUnicode_CheckExact(word)) {
        PyErr_SetString(PyExc_TypeError, "a memory's words are str");
        return -1;
    }
    return number_of(vocabulary, word, PyObject_Hash(word)); /* a str's hash: kept in it */
}

/* 0, or -1 with an exception set. */
static int
make_runs(PyObject *words, Runs *runs)
{
    Py_ssize_t n = PyList_GET_SIZE(words), total = 0;
    runs->ids = NULL;
    runs->stop = NULL;
    runs->count = n;
    runs->start = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n ? n : 1));
    runs->stop = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n ? n : 1));
    if (runs->start == NULL || runs->stop == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    /* Every memory's words an exact tuple before any is read; reading them (str compared with str)
       runs no Python code, so the list cannot change under the borrowed references. */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *its = PyList_GET_ITEM(words, i);
        if (!exact_words(its))
            goto fail;
        runs->start[i] = total;
        total += PyTuple_GET_SIZE(its);
    }
    if (total >= INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many words");
        goto fail;
    }
    runs->ids = PyMem_Malloc(sizeof(int32_t) * (size_t)(total ? total : 1));
    Word_table vocabulary = {NULL, 0, 0};
    if (runs->ids == NULL) {
        PyErr_NoMemory();
        goto fail_vocabulary;
    }
    if (word_table_init(&vocabulary, 1024) < 0)
        goto fail_vocabulary;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *its = PyList_GET_ITEM(words, i);
        int32_t *run = &runs->ids[runs->start[i]];
        Py_ssize_t at = 0;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(its); k++) {
            int32_t number = word_number(&vocabulary, PyTuple_GET_ITEM(its, k));
            if (number < 0)
                goto fail_vocabulary;
            /* Kept sorted as it is made (a memory has some 8 words: a call to qsort costs more). */
            Py_ssize_t j = at;
            while (j > 0 && run[j - 1] > number)
                j--;
            if (j > 0 && run[j - 1] == number) /* the word again */
                continue;
            memmove(&run[j + 1], &run[j], sizeof(int32_t) * (size_t)(at - j));
            run[j] = number;
            at++;
        }
        runs->stop[i] = runs->start[i] + at;
    }
    word_table_free(&vocabulary, 0);
    return 0;

fail_vocabulary:
    word_table_free(&vocabulary, 0);
fail:
    free_runs(runs);
    return -1;
}

/* How many numbers two sorted runs share. */
static Py_ssize_t
shared_count(const Runs *runs, Py_ssize_t a, Py_ssize_t b)
{
    const int32_t *x = &runs->ids[runs->start[a]], *x_end = &runs->ids[runs->stop[a]];
    const int32_t *y = &runs->ids[runs->start[b]], *y_end = &runs->ids[runs->stop[b]];
    Py_ssize_t count = 0;
    while (x < x_end && y < y_end) {
        if (*x < *y)
            x++;
        else if (*y < *x)
            y++;
        else {
            count++;
            x++;
            y++;
        }
    }
    return count;
}

/* Item i of a list of ints as a Py_ssize_t; -1 with an exception set when it is not one. */
static Py_ssize_t
list_size(PyObject *list, Py_ssize_t i)
{
    if (i < 0 || i >= PyList_GET_SIZE(list)) {
        PyErr_SetString(PyExc_IndexError, "list index out of range");
        return -1;
    }
    PyObject *item = PyList_GET_ITEM(list, i);
    if (!PyLong_CheckExact(item)) { /* an int's own conversion runs no Python code */
        PyErr_SetString(PyExc_TypeError, "a size is an int");
        return -1;
    }
    return PyLong_AsSsize_t(item);
}

static PyObject *
scored_pairs(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *pairs, *words, *sizes, *body_size, *odd, *same_tokens;
    Py_ssize_t n, min_shared;
    double min_overlap;
    if (!PyArg_ParseTuple(args, "OO!O!O!O!nndO", &pairs, &PyList_Type, &words, &PyList_Type, &sizes,
                          &PyList_Type, &body_size, &PySet_Type, &odd, &n, &min_shared, &min_overlap,
                          &same_tokens))
        return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "n is a count of memories");
        return NULL;
    }
    Runs runs;
    if (make_runs(words, &runs) < 0)
        return NULL;
    PyObject *it = PyObject_GetIter(pairs);
    if (it == NULL) {
        free_runs(&runs);
        return NULL;
    }
    PyObject *by_ratio = PyDict_New();
    if (by_ratio == NULL) {
        Py_DECREF(it);
        free_runs(&runs);
        return NULL;
    }
    PyObject *pair;
    while ((pair = PyIter_Next(it)) != NULL) {
        PyObject *pa, *pb;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "a pair is a tuple (a, b)");
            goto fail_pair;
        }
        pa = PyTuple_GET_ITEM(pair, 0);
        pb = PyTuple_GET_ITEM(pair, 1);
        Py_ssize_t a = PyLong_AsSsize_t(pa), b = PyLong_AsSsize_t(pb);
        if ((a == -1 || b == -1) && PyErr_Occurred())
            goto fail_pair;
        if (a < 0 || b < 0 || a >= runs.count || b >= runs.count) {
            PyErr_SetString(PyExc_IndexError, "list index out of range");
            goto fail_pair;
        }
        Py_ssize_t shared = shared_count(&runs, a, b);
        if (shared < min_shared) {
            Py_DECREF(pair);
            continue;
        }
        Py_ssize_t sa = list_size(sizes, a), sb = list_size(sizes, b);
        if ((sa == -1 || sb == -1) && PyErr_Occurred())
            goto fail_pair;
        Py_ssize_t smaller = sa < sb ? sa : sb;
        if (smaller == 0) {
            PyErr_SetString(PyExc_ZeroDivisionError, "division by zero");
            goto fail_pair;
        }
        /* Counts of words, far below 2**53: the same double as Python's int / int. */
        double ratio = (double)shared / (double)smaller;
        if (ratio < min_overlap) {
            Py_DECREF(pair);
            continue;
        }
        int check = 0;
        /* As the reference's `shared >= body_size[a] == body_size[b]`: b's read only when needed. */
        Py_ssize_t ba = list_size(body_size, a), bb = -1;
        if (ba == -1 && PyErr_Occurred())
            goto fail_pair;
        if (shared >= ba && (bb = list_size(body_size, b)) == -1 && PyErr_Occurred())
            goto fail_pair;
        if (shared >= ba && ba == bb)
            check = 1;
        else if (PySet_GET_SIZE(odd) > 0) { /* read again each pair: same_tokens may add to it */
            int in_odd = PySet_Contains(odd, pa);
            if (in_odd == 0)
                in_odd = PySet_Contains(odd, pb);
            if (in_odd < 0)
                goto fail_pair;
            check = in_odd;
        }
        if (check) {
            PyObject *same = PyObject_CallFunctionObjArgs(same_tokens, pa, pb, NULL);
            if (same == NULL)
                goto fail_pair;
            int truth = PyObject_IsTrue(same);
            Py_DECREF(same);
            if (truth < 0)
                goto fail_pair;
            if (truth) {
                Py_DECREF(pair);
                continue;
            }
        }
        if (n > 0 && a > (PY_SSIZE_T_MAX - b) / n) {
            PyErr_SetString(PyExc_OverflowError, "pair code out of range");
            goto fail_pair;
        }
        PyObject *key = PyFloat_FromDouble(ratio);
        if (key == NULL)
            goto fail_pair;
        PyObject *codes = PyDict_GetItemWithError(by_ratio, key); /* borrowed */
        if (codes == NULL) {
            if (PyErr_Occurred() || (codes = PyList_New(0)) == NULL) {
                Py_DECREF(key);
                goto fail_pair;
            }
            int set = PyDict_SetItem(by_ratio, key, codes);
            Py_DECREF(codes); /* the dict holds it */
            if (set < 0) {
                Py_DECREF(key);
                goto fail_pair;
            }
        }
        Py_DECREF(key);
        PyObject *code = PyLong_FromSsize_t(a * n + b);
        if (code == NULL)
            goto fail_pair;
        int appended = PyList_Append(codes, code);
        Py_DECREF(code);
        if (appended < 0)
            goto fail_pair;
        Py_DECREF(pair);
    }
    Py_DECREF(it);
    free_runs(&runs);
    if (PyErr_Occurred()) {
        Py_DECREF(by_ratio);
        return NULL;
    }
    return by_ratio;

fail_pair:
    Py_DECREF(pair);
    Py_DECREF(it);
    Py_DECREF(by_ratio);
    free_runs(&runs);
    return NULL;
}

/* ---- document_frequencies ------------------------------------------------------------------ */

typedef struct {
    int64_t count;
    Py_ssize_t number; /* the order the word was first met in */
} Frequency;

/* Most first, then in the order first met: as Counter.most_common's stable sort orders them. */
static int
cmp_frequency(const void *x, const void *y)
{
    const Frequency *a = x, *b = y;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return (a->number > b->number) - (a->number < b->number);
}

static PyObject *
document_frequencies(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *memories;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &memories))
        return NULL;
    if ((memories = PySequence_Tuple(memories)) == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(memories), room = 1024, met = 0;
    Word_table vocabulary = {NULL, 0, 0};
    Frequency *counts = PyMem_Malloc(sizeof(Frequency) * (size_t)room);
    PyObject *out = NULL;
    if (counts == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (word_table_init(&vocabulary, 1024) < 0)
        goto done;
    /* Each memory checked as it is read (an exact tuple, its words exact str: `word_number`); reading
       runs no Python code, and `memories` holds every tuple to the end. */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *its = PyTuple_GET_ITEM(memories, i);
        if (!exact_words(its))
            goto done;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(its); k++) {
            int32_t number = word_number(&vocabulary, PyTuple_GET_ITEM(its, k));
            if (number >= 0 && number >= room) {
                room *= 2;
                Frequency *more = PyMem_Realloc(counts, sizeof(Frequency) * (size_t)room);
                if (more == NULL) {
                    PyErr_NoMemory();
                    number = -1;
                } else
                    counts = more;
            }
            if (number < 0)
                goto done;
            if (number == met) { /* a word not met before: numbers are given in turn */
                counts[number].number = number;
                counts[number].count = 0;
                met++;
            }
            counts[number].count++;
        }
    }
    Py_ssize_t words = met;
    /* The table gives a word back by its number. */
    PyObject **by_number = PyMem_Malloc(sizeof(PyObject *) * (size_t)(words ? words : 1));
    if (by_number == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t slot = 0; slot <= vocabulary.mask; slot++)
        if (vocabulary.slots[slot].word != NULL)
            by_number[vocabulary.slots[slot].value] = vocabulary.slots[slot].word;
    qsort(counts, (size_t)words, sizeof(Frequency), cmp_frequency);
    out = PyList_New(words);
    for (Py_ssize_t j = 0; out != NULL && j < words; j++) {
        PyObject *count = PyLong_FromLongLong(counts[j].count);
        PyObject *item = count == NULL ? NULL : PyTuple_Pack(2, by_number[counts[j].number], count);
        Py_XDECREF(count);
        if (item == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, j, item);
    }
    PyMem_Free(by_number);

done:
    word_table_free(&vocabulary, 0);
    PyMem_Free(counts);
    Py_DECREF(memories);
    return out;
}

/* ---- hot_signatures ------------------------------------------------------------------------ */

/* One member's ranks, sorted as sorted() sorts (by <, stable), into `found` (owned references; room
   for each of its words); their count, or -1 with an exception set. */
static Py_ssize_t
ranks_of(PyObject *words, PyObject *ranks, PyObject **found)
{
    Py_ssize_t count = 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(words); k++) {
        PyObject *word = PyTuple_GET_ITEM(words, k), *rank = NULL;
        if (!PyUnicode_CheckExact(word))
            PyErr_SetString(PyExc_TypeError, "a memory's words are str");
        else
            rank = PyDict_GetItemWithError(ranks, word); /* borrowed; a str's hash is kept in it */
        if (rank == NULL && PyErr_Occurred())
            goto fail;
        if (rank == NULL)
            continue;
        /* An int (the caller's ranks): comparing it runs no Python code. */
        if (!PyLong_CheckExact(rank)) {
            PyErr_SetString(PyExc_TypeError, "a rank is an int");
            goto fail;
        }
        if (PyObject_IsTrue(rank) == 0) /* filter(None, ...): a rank of 0 is left out */
            continue;
        Py_ssize_t j = count++;
        while (j > 0 && PyObject_RichCompareBool(rank, found[j - 1], Py_LT) == 1) {
            found[j] = found[j - 1];
            j--;
        }
        Py_INCREF(rank);
        found[j] = rank;
    }
    return count;

fail:
    for (Py_ssize_t j = 0; j < count; j++)
        Py_DECREF(found[j]);
    return -1;
}

static PyObject *
hot_signatures(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *memories, *ranks;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &memories, &PyDict_Type, &ranks))
        return NULL;
    if (!PyDict_CheckExact(ranks) || !all_str(ranks, &PyLong_Type)) { /* then a lookup compares str with str */
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "ranks are a dict");
        return NULL;
    }
    if ((memories = PySequence_Tuple(memories)) == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(memories), room = 0;
    PyObject *out = PyList_New(n);
    if (out == NULL) {
        Py_DECREF(memories);
        return NULL;
    }
    PyObject **found = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *words = PyTuple_GET_ITEM(memories, i);
        if (!exact_words(words))
            goto fail;
        if (PyTuple_GET_SIZE(words) > room) {
            room = PyTuple_GET_SIZE(words) * 2;
            PyMem_Free(found);
            found = PyMem_Malloc(sizeof(PyObject *) * (size_t)room);
            if (found == NULL) {
                PyErr_NoMemory();
                goto fail;
            }
        }
        Py_ssize_t count = ranks_of(words, ranks, found);
        if (count < 0)
            goto fail;
        PyObject *sig = PyTuple_New(count);
        if (sig == NULL) {
            for (Py_ssize_t j = 0; j < count; j++)
                Py_DECREF(found[j]);
            goto fail;
        }
        for (Py_ssize_t j = 0; j < count; j++)
            PyTuple_SET_ITEM(sig, j, found[j]); /* the tuple takes the reference */
        PyList_SET_ITEM(out, i, sig);
    }
    PyMem_Free(found);
    Py_DECREF(memories);
    return out;

fail:
    PyMem_Free(found);
    Py_DECREF(out);
    Py_DECREF(memories);
    return NULL;
}

/* ---- bucket_neighbours --------------------------------------------------------------------- */

#define RAREST 5

/* A bucket of a member with `rarest` rarest hot words: the positions of its words (kept), and the
   position of the word that orders it there (-1: none). The same list, in the same order, as
   hot_subjects._BUCKETS: the order decides which filing is a bucket's first. */
typedef struct {
    int count;
    int kept[RAREST];
    int left_out;
} Filing;

typedef struct {
    int count;
    Filing filings[RAREST + 1];
} Filings;

static Filings FILINGS[RAREST + 1]; /* by rarest: 2..RAREST */

static void
make_filings(void)
{
    for (int rarest = 2; rarest <= RAREST; rarest++) {
        Filings *fs = &FILINGS[rarest];
        fs->count = 0;
        if (rarest < RAREST) {
            Filing *f = &fs->filings[fs->count++];
            f->count = rarest;
            for (int i = 0; i < rarest; i++)
                f->kept[i] = i;
            f->left_out = -1;
        }
        if (rarest > 2) {
            for (int left_out = 0; left_out < rarest; left_out++) {
                Filing *f = &fs->filings[fs->count++];
                f->count = 0;
                for (int i = 0; i < rarest; i++)
                    if (i != left_out)
                        f->kept[f->count++] = i;
                f->left_out = left_out;
            }
        }
    }
}

/* One slot of the table of buckets: a bucket is named by the member and the filing that made it
   (its words are that member's ranks at the filing's positions) and holds its number. */
typedef struct {
    uint64_t hash;
    int64_t number;
    Py_ssize_t member; /* -1: an empty slot */
    int filing;
    int rarest;
} Bucket;

static uint64_t
mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

static int
same_words(const int64_t *ranks, Py_ssize_t m1, const Filing *f1, Py_ssize_t m2, const Filing *f2)
{
    if (f1->count != f2->count)
        return 0;
    for (int i = 0; i < f1->count; i++)
        if (ranks[m1 * RAREST + f1->kept[i]] != ranks[m2 * RAREST + f2->kept[i]])
            return 0;
    return 1;
}

static size_t
table_size(size_t at_least)
{
    size_t size = 16;
    while (size < at_least * 2)
        size <<= 1;
    return size;
}

/* A number's bucket index (the order in which numbers were first seen), by open addressing. */
typedef struct {
    int64_t number;
    Py_ssize_t index; /* -1: empty */
} Seen;

static int
cmp_int64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

static PyObject *
bucket_neighbours(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *sigs, *names;
    long long stride_ll, base_ll;
    if (!PyArg_ParseTuple(args, "O!LLO!", &PyList_Type, &sigs, &stride_ll, &base_ll, &PyList_Type, &names))
        return NULL;
    /* The largest place is (base + 1) * stride + a member below stride. */
    if (stride_ll <= 0 || base_ll < 0 || base_ll > INT64_MAX / stride_ll - 2) {
        PyErr_SetString(PyExc_OverflowError, "ranks out of range");
        return NULL;
    }
    int64_t stride = stride_ll, last = (base_ll + 1) * stride_ll;
    if ((sigs = PySequence_Tuple(sigs)) == NULL)
        return NULL;
    if ((names = PySequence_Tuple(names)) == NULL) {
        Py_DECREF(sigs);
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(sigs);
    int64_t *ranks = NULL, *later_number = NULL, *later_place = NULL, *members = NULL;
    int *rarest_of = NULL;
    Bucket *table = NULL;
    Seen *seen = NULL;
    Py_ssize_t *first_of = NULL, *fill = NULL, *start = NULL;
    PyObject *result = NULL, *pairs = NULL;
    if (PyTuple_GET_SIZE(names) != n) {
        PyErr_SetString(PyExc_ValueError, "a name for each member");
        goto done;
    }

    ranks = PyMem_Malloc(sizeof(int64_t) * RAREST * (size_t)(n ? n : 1));
    rarest_of = PyMem_Malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (ranks == NULL || rarest_of == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    size_t filings = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *sig = PyTuple_GET_ITEM(sigs, i);
        if (!PyTuple_CheckExact(sig)) {
            PyErr_SetString(PyExc_TypeError, "a member's hot words are a tuple of ranks");
            goto done;
        }
        Py_ssize_t len = PyTuple_GET_SIZE(sig);
        int rarest = len < RAREST ? (int)len : RAREST;
        rarest_of[i] = rarest;
        for (int j = 0; j < rarest; j++) {
            PyObject *rank = PyTuple_GET_ITEM(sig, j);
            if (!PyLong_CheckExact(rank)) { /* an int's own conversion runs no Python code */
                PyErr_SetString(PyExc_TypeError, "a rank is an int");
                goto done;
            }
            long long r = PyLong_AsLongLong(rank);
            if (r == -1 && PyErr_Occurred())
                goto done;
            if (r < 0 || r > last - stride) {
                PyErr_SetString(PyExc_OverflowError, "ranks out of range");
                goto done;
            }
            ranks[i * RAREST + j] = r;
        }
        if (rarest >= 2) {
            if (i >= stride) { /* a place is a rank plus a member: members must be below the stride */
                PyErr_SetString(PyExc_OverflowError, "more members than the stride");
                goto done;
            }
            filings += (size_t)FILINGS[rarest].count;
        }
    }

    size_t slots = table_size(filings);
    table = PyMem_Malloc(sizeof(Bucket) * slots);
    later_number = PyMem_Malloc(sizeof(int64_t) * (filings ? filings : 1));
    later_place = PyMem_Malloc(sizeof(int64_t) * (filings ? filings : 1));
    if (table == NULL || later_number == NULL || later_place == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t s = 0; s < slots; s++)
        table[s].member = -1;
    size_t later = 0;
    /* Lanes in the order of hot_subjects._BUCKETS (rarest 5, 4, 3, 2), each bucket of the lane in
       turn, each member of the lane in order: the first filing of a bucket names its number. */
    for (int rarest = RAREST; rarest >= 2; rarest--) {
        const Filings *fs = &FILINGS[rarest];
        for (int k = 0; k < fs->count; k++) {
            const Filing *f = &fs->filings[k];
            for (Py_ssize_t i = 0; i < n; i++) {
                if (rarest_of[i] != rarest)
                    continue;
                const int64_t *r = &ranks[i * RAREST];
                uint64_t h = (uint64_t)f->count;
                for (int j = 0; j < f->count; j++)
                    h = mix(h, (uint64_t)r[f->kept[j]]);
                int64_t place = (f->left_out < 0 ? last : r[f->left_out]) + i;
                size_t s = (size_t)h & (slots - 1);
                for (;;) {
                    Bucket *bucket = &table[s];
                    if (bucket->member < 0) {
                        bucket->hash = h;
                        bucket->number = place;
                        bucket->member = i;
                        bucket->filing = k;
                        bucket->rarest = rarest;
                        break;
                    }
                    if (bucket->hash == h &&
                        same_words(ranks, bucket->member, &FILINGS[bucket->rarest].filings[bucket->filing], i, f)) {
                        if (bucket->number == place) /* the member itself again (a rank twice) */
                            break;
                        later_number[later] = bucket->number;
                        later_place[later] = place;
                        later++;
                        break;
                    }
                    s = (s + 1) & (slots - 1);
                }
            }
        }
    }
    PyMem_Free(table);
    table = NULL;

    /* The shared buckets in the order their first later filing came, each its first filing (whose
       place is its number) and the later ones, sorted. */
    size_t seen_slots = table_size(later);
    seen = PyMem_Malloc(sizeof(Seen) * seen_slots);
    first_of = PyMem_Malloc(sizeof(Py_ssize_t) * (later ? later : 1)); /* each later filing: its bucket */
    if (seen == NULL || first_of == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t s = 0; s < seen_slots; s++)
        seen[s].index = -1;
    Py_ssize_t buckets = 0;
    for (size_t j = 0; j < later; j++) {
        size_t s = (size_t)mix(0, (uint64_t)later_number[j]) & (seen_slots - 1);
        while (seen[s].index >= 0 && seen[s].number != later_number[j])
            s = (s + 1) & (seen_slots - 1);
        if (seen[s].index < 0) {
            seen[s].number = later_number[j];
            seen[s].index = buckets++;
        }
        first_of[j] = seen[s].index;
    }
    PyMem_Free(seen);
    seen = NULL;
    start = PyMem_Calloc((size_t)buckets + 1, sizeof(Py_ssize_t));
    fill = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(buckets ? buckets : 1));
    members = PyMem_Malloc(sizeof(int64_t) * (later + (size_t)buckets + 1));
    if (start == NULL || fill == NULL || members == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t j = 0; j < later; j++)
        start[first_of[j] + 1]++;
    for (Py_ssize_t b = 0; b < buckets; b++)
        start[b + 1] += start[b] + 1; /* + its first filing */
    for (Py_ssize_t b = 0; b < buckets; b++)
        fill[b] = start[b] + 1;
    for (size_t j = 0; j < later; j++) {
        Py_ssize_t b = first_of[j];
        members[start[b]] = later_number[j];
        members[fill[b]++] = later_place[j];
    }
    for (Py_ssize_t b = 0; b < buckets; b++)
        qsort(&members[start[b]], (size_t)(start[b + 1] - start[b]), sizeof(int64_t), cmp_int64);

    /* The neighbours as pairs of names, the smaller number's first: every pair whose bucket order
       rises, then those where it falls, each once (the order of hot_subjects.bucket_neighbours). */
    pairs = PyDict_New();
    if (pairs == NULL)
        goto done;
    for (int rising = 1; rising >= 0; rising--) {
        for (Py_ssize_t b = 0; b < buckets; b++) {
            for (Py_ssize_t j = start[b]; j + 1 < start[b + 1]; j++) {
                int64_t before = members[j] % stride, after = members[j + 1] % stride;
                if ((before < after) != rising)
                    continue;
                Py_ssize_t lo = (Py_ssize_t)(rising ? before : after), hi = (Py_ssize_t)(rising ? after : before);
                if (lo >= n || hi >= n) { /* a member's number is below n: only a rank out of order gets here */
                    PyErr_SetString(PyExc_IndexError, "tuple index out of range");
                    goto done;
                }
                PyObject *pair = PyTuple_Pack(2, PyTuple_GET_ITEM(names, lo), PyTuple_GET_ITEM(names, hi));
                int ok = pair != NULL && PyDict_SetDefault(pairs, pair, Py_None) != NULL;
                Py_XDECREF(pair);
                if (!ok)
                    goto done;
            }
        }
    }
    result = pairs;
    pairs = NULL;

done:
    PyMem_Free(ranks);
    PyMem_Free(rarest_of);
    PyMem_Free(table);
    PyMem_Free(seen);
    PyMem_Free(first_of);
    PyMem_Free(start);
    PyMem_Free(fill);
    PyMem_Free(members);
    PyMem_Free(later_number);
    PyMem_Free(later_place);
    Py_XDECREF(pairs);
    Py_DECREF(sigs);
    Py_DECREF(names);
    return result;
}

static PyMethodDef methods[] = {
    {"scored_pairs", scored_pairs, METH_VARARGS,
     "scored_pairs(pairs, words, sizes, body_size, odd, n, min_shared, min_overlap, same_tokens): "
     "subject_pairs.scored_pairs in C."},
    {"significant_tuples", significant_tuples, METH_VARARGS,
     "significant_tuples(texts, leave_out, tags, tag_word): text.significant_tuples in C."},
    {"document_frequencies", document_frequencies, METH_VARARGS,
     "document_frequencies(memories): subject_pairs.document_frequencies in C."},
    {"hot_signatures", hot_signatures, METH_VARARGS,
     "hot_signatures(memories, ranks): hot_subjects.hot_signatures in C."},
    {"bucket_neighbours", bucket_neighbours, METH_VARARGS,
     "bucket_neighbours(sigs, stride, base, names): hot_subjects.bucket_neighbours in C."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_pair_search", "The subject-pair search's inner loops in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__pair_search(void)
{
    make_filings();
    return PyModule_Create(&module_def);
}
