from django.apps import AppConfig


class RatingsConfig(AppConfig):
    name = "annotation.ratings"
    label = "ratings"
    verbose_name = "Ratings (ACR and multi-stimulus)"
    default_auto_field = "django.db.models.BigAutoField"
