"""aimux-gateway: an OpenAI- and Anthropic-compatible HTTP server in front of the providers
(CONTRACT §7, seed 003).

``config`` reads the config file; ``openai_wire`` and ``anthropic_wire`` translate each ingress
protocol to the ops' neutral params and the ops' events back (``outcome``: what both share);
``failures`` classifies every failure (the gateway's own, or an op's envelope) once into a
client-facing error; ``engine`` runs ``stream_text`` on the core's stream engine from an event
loop; ``app`` is the ASGI app; ``server`` bounds a request's head in the HTTP protocol; ``cli``
the ``aimux-gateway`` command.
"""
