"""The pairwise kind's own table: the two generations a pairwise study item shows."""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q

from annotation.base.models import StudyItem
from judging.models import Generation


class PairwiseItem(models.Model):
    """The pair a pairwise study item shows: generation A and generation B, two L2s of one goal by two
    generators, A's generator_id sorting first (comparisons.py's orientation). A generation that a study
    shows cannot be deleted (PROTECT)."""

    item = models.OneToOneField(StudyItem, on_delete=models.CASCADE, related_name="pair", primary_key=True)
    generation_a = models.ForeignKey(Generation, on_delete=models.PROTECT, related_name="+")
    generation_b = models.ForeignKey(Generation, on_delete=models.PROTECT, related_name="+")

    class Meta:
        app_label = "annotation"
        constraints = [
            models.CheckConstraint(
                condition=~Q(generation_a=F("generation_b")), name="pairwise_item_two_generations"
            )
        ]

    def __str__(self) -> str:
        return f"pair {self.generation_a_id} vs {self.generation_b_id}"


def pair_of(item: StudyItem) -> PairwiseItem:
    """A pairwise study item's pair (load it with the item: select_related("pair__...")). The reverse
    one-to-one is declared here, outside the app's models module, where the type checker does not see it."""
    pair: PairwiseItem = getattr(item, "pair")  # noqa: B009
    return pair
