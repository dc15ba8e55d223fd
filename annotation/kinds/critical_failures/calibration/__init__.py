"""Calibration of the critical-failures kind (issue #20): calibration samples and rounds, the human-calibrated
How2Score per generator and judge, the budget planner, and their pages."""
