from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0002_initial'),
        ('catalogue', '0001_initial'),
        ('submissions', '0001_initial'),
        ('jobs', '0001_initial'),
        ('scoring', '0001_initial'),
        ('feedback', '0002_keys_to_the_apps_models'),
        ('leaderboard', '0004_owner_control'),
    ]

    # State only: the models moved to the catalogue, accounts, submissions, jobs and scoring apps with their tables
    # (db_table); nothing in the database changes. The project app keeps migrations 0001-0005 as the tables' history.
    operations = [
        migrations.SeparateDatabaseAndState(database_operations=[], state_operations=[
            migrations.RemoveField(
                model_name='candidate',
                name='problem',
            ),
            migrations.RemoveField(
                model_name='candidate',
                name='submission',
            ),
            migrations.RemoveField(
                model_name='evaluationjob',
                name='candidate',
            ),
            migrations.RemoveField(
                model_name='evaluationjob',
                name='profile',
            ),
            migrations.RemoveField(
                model_name='evaluationjob',
                name='submission',
            ),
            migrations.RemoveField(
                model_name='evaluationjob',
                name='submitter',
            ),
            migrations.RemoveField(
                model_name='quotacharge',
                name='job',
            ),
            migrations.RemoveField(
                model_name='result',
                name='job',
            ),
            migrations.RemoveField(
                model_name='leaderboardentry',
                name='profile',
            ),
            migrations.RemoveField(
                model_name='submission',
                name='profile',
            ),
            migrations.RemoveField(
                model_name='problemscore',
                name='profile',
            ),
            migrations.RemoveField(
                model_name='problemstat',
                name='profile',
            ),
            migrations.RemoveField(
                model_name='leaderboardentry',
                name='submission',
            ),
            migrations.RemoveField(
                model_name='problemscore',
                name='problem',
            ),
            migrations.RemoveField(
                model_name='problemstat',
                name='problem',
            ),
            migrations.RemoveField(
                model_name='problemscore',
                name='result',
            ),
            migrations.RemoveField(
                model_name='problemscore',
                name='submission',
            ),
            migrations.RemoveField(
                model_name='quotacharge',
                name='submitter',
            ),
            migrations.RemoveField(
                model_name='submission',
                name='feedback_for',
            ),
            migrations.RemoveField(
                model_name='submission',
                name='submitter',
            ),
            migrations.RemoveField(
                model_name='submitter',
                name='user',
            ),
            migrations.DeleteModel(
                name='ApiToken',
            ),
            migrations.DeleteModel(
                name='Candidate',
            ),
            migrations.DeleteModel(
                name='EvaluationJob',
            ),
            migrations.DeleteModel(
                name='HardwareProfile',
            ),
            migrations.DeleteModel(
                name='LeaderboardEntry',
            ),
            migrations.DeleteModel(
                name='Problem',
            ),
            migrations.DeleteModel(
                name='ProblemStat',
            ),
            migrations.DeleteModel(
                name='Result',
            ),
            migrations.DeleteModel(
                name='ProblemScore',
            ),
            migrations.DeleteModel(
                name='QuotaCharge',
            ),
            migrations.DeleteModel(
                name='Submission',
            ),
            migrations.DeleteModel(
                name='Submitter',
            ),
        ]),
    ]
