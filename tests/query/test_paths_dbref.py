"""Paths through {$ref, $id, $db} subdocuments: pymongo decodes such a subdocument to a ``bson.DBRef``,
which to mongod is an ordinary document, so the matching traversal and the plain lookup walk into it
(``$ref``, ``$id``, ``$db`` and any extra field), in or out of arrays, like the dict it stands for."""

from bson.dbref import DBRef
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.query.paths import MISSING, get_path, get_path_values


def test_dbref_fields_are_reached_like_document_fields():
    doc = {"sub": DBRef("foo", 5, "db1", extra=1)}
    assert get_path_values(doc, "sub.$ref") == ["foo"]
    assert get_path_values(doc, "sub.$id") == [5]
    assert get_path_values(doc, "sub.$db") == ["db1"]
    assert get_path_values(doc, "sub.extra") == [1]
    assert get_path_values(doc, "sub.other") == [MISSING]
    assert get_path(doc, "sub.$id") == 5
    assert get_path(doc, "sub.$db") == "db1"
    assert get_path(doc, "sub.nope", "dflt") == "dflt"


def test_dbref_elements_of_an_array_continue_the_path():
    doc = {"links": [DBRef("a", 1), 7, DBRef("b", [2, 3], "d")]}
    assert get_path_values(doc, "links.$id") == [1, [2, 3]]
    assert get_path_values(doc, "links.$db") == [MISSING, "d"]
    assert get_path_values(doc, "links.$id", expand_arrays=True) == [1, 2, 3]
    # a numeric component: the element at that position, then every document element by field name
    assert get_path_values(doc, "links.2.$ref") == ["b", MISSING, MISSING]
    assert get_path_values(doc, "links.2.$ref", sort_keys=True) == ["b"]
    assert get_path(doc, "links.2.$id") == [2, 3]


def test_a_dbref_without_id_field_is_missing_past_it():
    assert get_path_values({"x": DBRef("c", {"k": 1})}, "x.$id.k") == [1]
    assert get_path_values({"x": DBRef("c", 1)}, "x.$id.k") == [MISSING]


_VALUES = st.one_of(st.integers(0, 3), st.lists(st.integers(0, 3), max_size=2), st.dictionaries(
    st.sampled_from(["k", "$id"]), st.integers(0, 3), max_size=2))
_PATHS = st.lists(st.sampled_from(["$ref", "$id", "$db", "k", "0", "1"]), min_size=1, max_size=3)


def _plain(value):
    # what is reached may be the DBRef (or an array holding it) itself: compare it as its document
    if isinstance(value, DBRef):
        return value.as_doc().to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@settings(max_examples=300, deadline=None)
@given(ident=_VALUES, database=st.one_of(st.none(), st.just("d")), as_element=st.booleans(), rest=_PATHS)
def test_dbref_walks_as_the_document_it_decodes_from(ident, database, as_element, rest):
    ref = DBRef("coll", ident, database)
    plain = ref.as_doc().to_dict()
    path = ".".join(["x", *rest])
    with_ref = {"x": [ref, 4] if as_element else ref}
    with_doc = {"x": [plain, 4] if as_element else plain}
    assert _plain(get_path_values(with_ref, path)) == get_path_values(with_doc, path)
    assert _plain(get_path_values(with_ref, path, sort_keys=True)) == get_path_values(with_doc, path, sort_keys=True)
    assert _plain(get_path(with_ref, path)) == get_path(with_doc, path)
