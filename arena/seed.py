"""The arena's starting content: the built-in demo systems and a prebaked prompt pool. Idempotent."""

from __future__ import annotations

from django.db import transaction

from annotation.services import system_get_or_create

from .adapters import prompt_key
from .models import AdapterKind, ArenaPrompt, ArenaSystem

PREBAKED_PROMPTS: list[tuple[str, str]] = [
    ("Upbeat synth-pop track at 120 BPM with a bright synth lead and punchy drums", ""),
    ("Slow melancholic piano ballad in A minor, soft and intimate", ""),
    ("Warm acoustic folk tune with fingerpicked guitar and a hopeful mood", ""),
    ("Dark driving electronic track at 128 BPM with a moody synth lead", ""),
    ("Relaxed lo-fi hip hop beat with mellow electric piano chords", ""),
    ("Tense cinematic strings piece in D minor with a slow pulse", ""),
    ("Cheerful flute melody over bouncy major chords, like a children's show theme", ""),
    ("Nostalgic 80s synthwave in E minor with big gated drums", ""),
    ("Calm ambient pad texture for meditation, very slow and gentle", ""),
    ("Energetic dance track with a four-on-the-floor kick and bright plucks", ""),
    ("Jazzy piano trio groove with walking bass and brushed drums", ""),
    ("Epic orchestral fanfare with brass and timpani in C major", ""),
    ("Bluesy guitar shuffle at a moderate tempo", ""),
    ("Minimal techno loop with a hypnotic bassline", ""),
    ("Gentle lullaby on a music box, soft and slow", ""),
    ("Funky slap bass groove with tight drums at 100 BPM", ""),
    ("Bossa nova with nylon guitar and light percussion", ""),
    ("Heroic video game overworld theme with a catchy lead melody", ""),
    ("Sad violin solo over sparse piano chords", ""),
    ("Upbeat ska rhythm with offbeat guitar stabs", ""),
    ("Chill tropical house with marimba and soft vocal chops, instrumental", ""),
    ("Driving rock instrumental with distorted guitars at 140 BPM", ""),
    ("Pop song with a female singer about summer nights", "Summer nights and city lights\nWe dance until the morning comes"),
    ("Soulful gospel choir singing a joyful refrain", "Lift me up, lift me higher\nLet the morning set my heart on fire"),
    ("Acoustic singer-songwriter ballad with a gentle male voice", "Old photographs on the kitchen wall\nI remember when we had it all"),
    ("Energetic pop-punk anthem with shouted vocals", "We are young and we are loud\nSinging out above the crowd"),
    ("Dreamy indie pop with airy vocals and reverb guitars", "Floating slowly through the blue\nEvery color reminds me of you"),
    ("Country song with a twangy singer and steel guitar", "Dusty road and a pickup truck\nDriving home on a little luck"),
    ("Smooth R&B slow jam with a silky lead vocal", "Stay with me a little longer\nEvery minute makes it stronger"),
    ("Rap verse over a boom bap beat", "Step to the mic with the rhythm in my chest\nEvery single line is better than the rest"),
]


@transaction.atomic
def arena_seed() -> dict[str, int]:
    """Register every demo system as an arena system and fill the prompt pool; running it twice changes nothing."""
    from annotation import demo

    systems = prompts = 0
    for spec in demo.DEMO_SYSTEMS:
        system = system_get_or_create(name=spec.name, organisation=spec.organisation)
        if not system.description:
            system.description = spec.description
            system.save(update_fields=["description"])
        _, created = ArenaSystem.objects.get_or_create(
            system=system,
            defaults={
                "adapter_kind": AdapterKind.DEMO,
                "adapter_config": {"demo": spec.name},
                "supports_vocals": True,  # every demo system adds a sung line when lyrics are given
                "supports_instrumental": True,
                "max_duration_seconds": 60.0,
            },
        )
        systems += int(created)
    for text, lyrics in PREBAKED_PROMPTS:
        _, created = ArenaPrompt.objects.get_or_create(prompt_key=prompt_key(text, lyrics), defaults={"text": text, "lyrics": lyrics, "is_prebaked": True})
        prompts += int(created)
    return {"systems_created": systems, "prompts_created": prompts, "systems": ArenaSystem.objects.count(), "prompts": ArenaPrompt.objects.count()}
