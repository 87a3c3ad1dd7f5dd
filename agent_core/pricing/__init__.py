"""Token and dollar accounting (genai-prices rates), per model, bucket and purpose."""
