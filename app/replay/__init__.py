"""`ctxtui replay`'s screen: progress, plots and the policy table."""
