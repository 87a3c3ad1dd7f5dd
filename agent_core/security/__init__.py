"""What the user trusts, and keeping other processes out of ctxtui's memory."""
