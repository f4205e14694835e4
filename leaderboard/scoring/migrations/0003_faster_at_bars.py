"""fast_1.5 and fast_2.0 counted from the judge's "faster at p" (ProblemScore.faster_1_5/faster_2_0), filled for the
scores already stored from their results' documents, and the leaderboard rows' fractions recounted from them."""

from django.db import migrations, models


def fill(apps, schema_editor):
    from evaluator.contract import schema

    ProblemScore = apps.get_model("scoring", "ProblemScore")
    LeaderboardEntry = apps.get_model("scoring", "LeaderboardEntry")
    Problem = apps.get_model("catalogue", "Problem")
    for score in ProblemScore.objects.filter(faster=True).select_related("result"):
        document = score.result.document if score.result_id and isinstance(score.result.document, dict) else {}
        at = schema.faster_at(document.get("timing"))
        score.faster_1_5, score.faster_2_0 = at[schema.bar_key(1.5)], at[schema.bar_key(2.0)]
        score.save(update_fields=["faster_1_5", "faster_2_0"])
    total = Problem.objects.count() or 87
    for entry in LeaderboardEntry.objects.all():
        scores = ProblemScore.objects.filter(submission_id=entry.submission_id, correct=True, faster=True)
        entry.fast_1_5 = scores.filter(faster_1_5=True).count() / total
        entry.fast_2_0 = scores.filter(faster_2_0=True).count() / total
        entry.save(update_fields=["fast_1_5", "fast_2_0"])


class Migration(migrations.Migration):

    dependencies = [
        ("scoring", "0002_peak_fraction_and_audits"),
        ("catalogue", "0001_initial"),
    ]

    operations = [
        migrations.AddField(model_name="problemscore", name="faster_1_5", field=models.BooleanField(default=False)),
        migrations.AddField(model_name="problemscore", name="faster_2_0", field=models.BooleanField(default=False)),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
