"""The rules stage: is a much-used memory a standing instruction, and what is its one-line rule?

Candidates are the deterministic pass's `promote_rule` proposals: crux trackers referenced at least
`promotionToRuleThreshold` times (advisory: crux rules are the user's to create) and bank records
corroborated at least `promote_corroboration_threshold` times (the strongest `rule_candidates_max`).
For a bank, a standing instruction becomes an automatic append to `rules/learned.md`; a plain fact
stays a proposal for the user.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..kinds import ActionKind
from ..config import Settings
from ..layouts.registry import layout_of
from ..llm import Handles, register_stub
from ..actions import PromoteRuleAction
from ..model import Action, Corpus
from ..rules.outcome import Outcome
from ..rules.text import significant_words
from .base import SHORT_TEXT, StageContext, ask_all, clip
from .model_text import model_text
from .heuristics.standing_rules import judge_rule, one_line_rule

NAME = "rules"
RULE_MIN, RULE_MAX = 3, 300


class RuleItem(BaseModel):
    handle: int
    text: str


class RuleInput(BaseModel):
    items: list[RuleItem]


class RuleDecision(BaseModel):
    handle: int = Field(description="The handle of the memory being judged, as offered.")
    reasoning: str = Field(description="One short sentence of reasoning.", json_schema_extra=SHORT_TEXT)
    standing_rule: bool = Field(description="True if it tells an agent what to do or not do every time.")
    rule: str | None = Field(default=None, description="The rule in one line (3-300 characters), when standing_rule.")


class RuleOutput(BaseModel):
    decisions: list[RuleDecision]


@register_stub(NAME)
def stub(payload: RuleInput) -> RuleOutput:
    out = []
    for item in payload.items:
        yes, why = judge_rule(item.text)
        out.append(RuleDecision(handle=item.handle, reasoning=why, standing_rule=yes, rule=one_line_rule(item.text) if yes else None))
    return RuleOutput(decisions=out)


def valid_rule(rule: str | None, source: str | None = None) -> str | None:
    """The rule as one clean line, or None: empty, multi-line, too short or long, or (given the
    memory it came from) not grounded in it — a model may rephrase a memory, not invent a rule."""
    if rule is None:
        return None
    text = model_text(rule)
    if "\n" in rule.strip() or not RULE_MIN <= len(text) <= RULE_MAX:
        return None
    if source is not None and not grounded(text, source):
        return None
    return text


def grounded(rule: str, source: str, share: float = 0.6) -> bool:
    """Most of the rule's significant words (loosely stemmed) appear in the memory it came from."""
    def stems(t: str) -> set[str]:
        return {w[:5] for w in significant_words(t)}

    words = stems(rule)
    return bool(words) and len(words & stems(source)) / len(words) >= share


class RuleStage:
    name = NAME

    def applies(self, corpus: Corpus, settings: Settings) -> bool:
        return NAME in layout_of(corpus).stages(settings)

    def run(self, ctx: StageContext, outcome: Outcome) -> Outcome:
        by_key = ctx.by_key
        candidates = [a for a in outcome.actions if a.kind == ActionKind.PROMOTE_RULE and a.source == "deterministic" and a.targets[0] in by_key]
        cap = layout_of(ctx.corpus).rule_candidate_cap(ctx.settings)
        if cap is not None:
            candidates.sort(key=lambda a: (-by_key[a.targets[0]].corroboration, a.targets[0]))
            candidates = candidates[:cap]
        if not candidates:
            return outcome
        def make_payload(handles: Handles, chunk: list[Action]) -> RuleInput:
            return RuleInput(items=[RuleItem(handle=handles.handle(a.targets[0]), text=clip(by_key[a.targets[0]].body, 600)) for a in chunk])

        verdicts = ask_all(ctx, NAME, candidates, lambda a: a.targets[0], make_payload, RuleOutput, lambda r: r.decisions)
        judged = {id(a) for a in candidates}
        out = Outcome([a for a in outcome.actions if id(a) not in judged], list(outcome.findings))
        for action in candidates:
            d = verdicts.get(action.targets[0])
            if d is None:
                out.actions.append(action)
                continue
            rule = valid_rule(d.rule, by_key[action.targets[0]].body) if d.standing_rule else None
            why = model_text(d.reasoning, limit=200)
            if rule is None:
                verdict = "a plain fact, not a standing rule" if not d.standing_rule else "no usable one-line rule grounded in the memory"
                out.actions.append(action.model_copy(update={"reason": f"{action.reason}; rules judge: {verdict} ({why})", "source": ctx.source(NAME)}))
                continue
            automatic = layout_of(ctx.corpus).automatic_rule_promotion
            # A model that promotes what the deterministic reading calls a plain fact ("Backups run
            # nightly at 02:00") may be wrong in the costly direction: the user decides.
            disputed = not judge_rule(by_key[action.targets[0]].body)[0]
            doubt = "; the deterministic reading calls it a plain fact, so it needs your decision" if disputed else ""
            out.actions.append(
                PromoteRuleAction(
                    targets=list(action.targets),
                    needs_user=not automatic or disputed,
                    reason=f"{action.reason}; rules judge: a standing instruction ({why}){doubt}",
                    source=ctx.source(NAME),
                    rule=rule,
                )
            )
        return out


STAGE = RuleStage()
