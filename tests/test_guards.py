"""Guard atoms and implication."""

from __future__ import annotations

from cachelint.semantic.guards import Atom, implied, residual
from cachelint.semantic.values import IsNoneKey, ParamRoot, TruthyKey

V = (ParamRoot("f", "cfg"),)
MC = V + ("model_config",)


def atom(kind, value, positive=True):
    return Atom({"truthy": TruthyKey, "isnone": IsNoneKey}[kind](value), positive, "t")


def test_same_atom_implies_itself_only_with_same_polarity():
    a = atom("truthy", MC + ("is_encoder_decoder",))
    assert implied(a, [a])
    assert not implied(a, [atom("truthy", MC + ("is_encoder_decoder",), False)])
    assert not implied(a, [])


def test_truthy_attribute_implies_truthy_and_not_none_prefix():
    facts = [atom("truthy", MC + ("is_encoder_decoder",))]
    assert implied(atom("truthy", MC), facts)
    assert implied(atom("isnone", MC, False), facts)
    assert not implied(atom("truthy", MC + ("pooler_config",), False), facts)


def test_none_checks():
    assert implied(atom("truthy", MC, False), [atom("isnone", MC)])
    assert implied(atom("isnone", MC, False), [atom("truthy", MC)])
    assert not implied(atom("isnone", MC), [atom("truthy", MC, False)])  # falsy is not None


def test_residual_drops_what_other_residual_atoms_imply():
    required = [
        atom("truthy", MC),
        atom("truthy", MC + ("pooler_config",), False),
        atom("truthy", MC + ("is_encoder_decoder",)),
    ]
    left = residual(required, [])
    assert [a.key for a in left] == [TruthyKey(MC + ("pooler_config",)), TruthyKey(MC + ("is_encoder_decoder",))]
    left = residual(required, [atom("truthy", MC + ("is_encoder_decoder",))])
    assert [(a.key, a.positive) for a in left] == [(TruthyKey(MC + ("pooler_config",)), False)]
