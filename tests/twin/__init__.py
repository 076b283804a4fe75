"""Tests of the twin package."""
