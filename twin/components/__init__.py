"""Components: each hop type of the order path, owning its latency model and capacity.

Every component reads its numbers from a calibration profile (``twin.profile``); the profile
entry cites where each default comes from. Modules:

- :mod:`.host`: the host's send and receive stack (kernel or bypass, tuning knobs, TLS, app).
- :mod:`.nic`: the ENA/Nitro NIC with its packet allowance and serialisation.
- :mod:`.fabric`: switches and fibre inside an AZ (rack, spine cell, between cells) and across AZs.
- :mod:`.hyperplane`: Hyperplane nodes (PrivateLink endpoint, NLB, Transit Gateway, NAT gateway).
- :mod:`.internet`: the Internet tier's CloudFront edge and public Application Load Balancer.
- :mod:`.exchange`: the venue's gateway threads and the risk check + matching engine.
"""
