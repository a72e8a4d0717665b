from django.urls import path

from common import converters  # noqa: F401  (registers <id:...>)

from . import adjudication_views, api, crowd_manage, crowd_views, questionnaire_views, views, views_export
from .api_dataset import StudyExportApi

urlpatterns = [
    # HTML
    path("", views.home, name="home"),
    path("audio/<uuid:public_id>/", views.clip_audio, name="clip-audio"),
    path("listen/<str:token>/", views.pair_audio, name="pair-audio"),
    path("consent/", views.consent, name="consent"),
    path("consent/withdraw/", views.consent_withdraw_view, name="consent-withdraw"),
    path("studies/<slug:name>/annotate/", views.annotate, name="annotate"),
    path("studies/<slug:name>/screening/", crowd_views.screening_page, name="screening"),
    path("studies/<slug:name>/screening/<str:token>/", crowd_views.screening_submit, name="screening-submit"),
    path("screening/<str:token>/trial/<id:index>.wav", crowd_views.screening_trial, name="screening-trial"),
    path("studies/<slug:name>/practice/", crowd_views.practice_page, name="practice"),
    path("practice/<id:item_id>/<str:which>/", crowd_views.practice_audio, name="practice-audio"),
    path("studies/<slug:name>/done/", crowd_views.recruitment_done, name="recruitment-done"),
    path("r/<str:token>/", crowd_views.recruitment_enter, name="recruitment-enter"),
    path("manage/studies/", views.study_manage_list, name="study-manage-list"),
    path("manage/studies/new/", views.study_create, name="study-create"),
    path("manage/import/", views.pairs_import, name="pairs-import"),
    path("manage/import/done/", views.pairs_import_done, name="pairs-import-done"),
    path("manage/studies/<slug:name>/", views.study_manage, name="study-manage"),
    path("manage/studies/<slug:name>/edit/", views.study_edit, name="study-edit"),
    path("manage/studies/<slug:name>/annotators/", views.study_annotators_add, name="study-annotators-add"),
    path("manage/studies/<slug:name>/export/", views_export.study_export, name="study-export"),
    path("manage/studies/<slug:name>/exports/<uuid:public_id>/", views_export.study_export_status, name="study-export-status"),
    path("manage/studies/<slug:name>/exports/<uuid:public_id>/download/", views_export.study_export_download, name="study-export-download"),
    path("manage/studies/<slug:name>/collaborators/", views.study_collaborators_set, name="study-collaborators"),
    path("manage/studies/<slug:name>/practice/", crowd_manage.practice_add, name="study-practice-add"),
    path("manage/studies/<slug:name>/practice/<id:item_id>/remove/", crowd_manage.practice_remove, name="study-practice-remove"),
    path("manage/studies/<slug:name>/links/", crowd_manage.recruitment_link_add, name="study-link-add"),
    path("manage/studies/<slug:name>/links/<id:link_id>/close/", crowd_manage.recruitment_link_close, name="study-link-close"),
    path("manage/studies/<slug:name>/links/<id:link_id>/resume/", crowd_manage.recruitment_link_resume, name="study-link-resume"),
    path("manage/studies/<slug:name>/adjudicators/", adjudication_views.study_adjudicators_set, name="study-adjudicators"),
    path("manage/studies/<slug:name>/adjudication/", adjudication_views.adjudication_queue, name="study-adjudication"),
    path("manage/studies/<slug:name>/adjudication/<id:item_id>/", adjudication_views.adjudication_item, name="study-adjudication-item"),
    path("manage/studies/<slug:name>/adjudication/<id:item_id>/<str:which>/", adjudication_views.adjudication_audio, name="study-adjudication-audio"),
    # Questionnaires before and after the study (annotation/questionnaire_views.py)
    path("studies/<slug:name>/questionnaire/pre/", questionnaire_views.questionnaire_page, {"phase": "pre"}, name="questionnaire-pre"),
    path("studies/<slug:name>/questionnaire/post/", questionnaire_views.questionnaire_page, {"phase": "post"}, name="questionnaire-post"),
    path("manage/studies/<slug:name>/questionnaires/", questionnaire_views.questionnaire_edit, name="study-questionnaires"),
    path("manage/studies/<slug:name>/questionnaires/answers.csv", questionnaire_views.questionnaire_answers_csv, name="study-questionnaire-answers"),
    # API
    path("api/studies/", api.StudyListApi.as_view(), name="api-study-list"),
    path("api/studies/<slug:name>/next/", api.AssignmentNextApi.as_view(), name="api-assignment-next"),
    path("api/studies/<slug:name>/assignments/<id:assignment_id>/judgment/", api.JudgmentCycleApi.as_view(), name="api-judgment-cycle"),
    path("api/studies/<slug:name>/assignments/<id:assignment_id>/answer/", api.DimensionAnswerApi.as_view(), name="api-dimension-answer"),
    path("api/studies/<slug:name>/export/", StudyExportApi.as_view(), name="api-study-export"),
    path("api/assignments/<id:assignment_id>/listening/", api.ListeningEventsApi.as_view(), name="api-listening-events"),
    path("api/assignments/<id:assignment_id>/judgment/", api.JudgmentSubmitApi.as_view(), name="api-judgment-submit"),
    path("api/assignments/<id:assignment_id>/skip/", api.AssignmentSkipApi.as_view(), name="api-assignment-skip"),
]

# The study's Prolific page (annotation/prolific_views.py).
from . import prolific_views  # noqa: E402

urlpatterns += [
    path("manage/studies/<slug:name>/prolific/", prolific_views.prolific_manage, name="study-prolific"),
    path("manage/studies/<slug:name>/prolific/token/", prolific_views.prolific_token, name="study-prolific-token"),
    path("manage/studies/<slug:name>/prolific/tie/", prolific_views.prolific_tie, name="study-prolific-tie"),
    path("manage/studies/<slug:name>/prolific/<id:tie_id>/fetch/", prolific_views.prolific_fetch, name="study-prolific-fetch"),
    path("manage/studies/<slug:name>/prolific/<id:tie_id>/decide/", prolific_views.prolific_decide, name="study-prolific-decide"),
    path("manage/studies/<slug:name>/prolific/<id:tie_id>/bonus/", prolific_views.prolific_bonus, name="study-prolific-bonus"),
    path("manage/studies/<slug:name>/prolific/<id:tie_id>/queue/", prolific_views.prolific_queue, name="study-prolific-queue"),
]
