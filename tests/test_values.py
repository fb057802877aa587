"""The typed records of symbolic values and guard-atom keys."""

from __future__ import annotations

import copy
import pickle

from cachelint.semantic.values import (
    CallRoot,
    CmpKey,
    ConstRoot,
    GlobalRoot,
    IsNoneKey,
    KwArg,
    OpaqueKey,
    ParamRoot,
    SelfRoot,
    TruthyKey,
)

ROOTS = [
    SelfRoot("m.C"),
    GlobalRoot("m.C"),
    ConstRoot("m.C"),
    ParamRoot("m.f", "x"),
    CallRoot(((GlobalRoot("m.f"),)), ()),
]


def test_records_with_equal_fields_of_different_kinds_differ():
    assert SelfRoot("m.C") != GlobalRoot("m.C")
    assert GlobalRoot("m.C") != ConstRoot("m.C")
    assert TruthyKey((SelfRoot("m.C"),)) != IsNoneKey((SelfRoot("m.C"),))
    assert len(set(ROOTS)) == len(ROOTS)
    assert len({TruthyKey(()), IsNoneKey(()), CmpKey("==", (), ()), OpaqueKey("", ())}) == 4


def test_equal_records_hash_equal_and_serve_as_dict_keys():
    memo = {(r, "attr"): i for i, r in enumerate(ROOTS)}
    assert memo[(SelfRoot("m.C"), "attr")] == 0
    assert memo[(GlobalRoot("m.C"), "attr")] == 1
    assert memo[(ParamRoot("m.f", "x"), "attr")] == 3
    assert hash(CallRoot((GlobalRoot("m.f"),), (KwArg("k", (ConstRoot(1),)),))) == hash(
        CallRoot((GlobalRoot("m.f"),), (KwArg("k", (ConstRoot(1),)),))
    )
    assert {TruthyKey((SelfRoot("m.C"), "a")), TruthyKey((SelfRoot("m.C"), "a"))} == {TruthyKey((SelfRoot("m.C"), "a"))}


def test_fields_by_name():
    assert SelfRoot("m.C").cls == "m.C"
    p = ParamRoot("m.f", "x")
    assert (p.function, p.name) == ("m.f", "x")
    c = CallRoot((GlobalRoot("m.f"),), (KwArg("k", None),))
    assert c.callee[0].qualname == "m.f" and c.args[0].name == "k" and c.args[0].value is None
    k = CmpKey("<", (ConstRoot(1),), (ConstRoot(2),))
    assert (k.op, k.left[0].value, k.right[0].value) == ("<", 1, 2)
    assert OpaqueKey("m.f", ("name", "x")).expr == ("name", "x")
    assert repr(ParamRoot("m.f", "x")) == "ParamRoot('m.f', 'x')"


def test_records_copy_and_pickle_as_themselves():
    for r in ROOTS + [KwArg("k", (ConstRoot(1),)), CmpKey("==", (), ())]:
        for back in (copy.deepcopy(r), pickle.loads(pickle.dumps(r))):
            assert back == r and type(back) is type(r)
