"""Helpers the test rooms share (not tests themselves): real servers, generators, runners."""
