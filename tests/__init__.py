"""Tests for exchange-latency-twin."""
