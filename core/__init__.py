"""What every part of the shop shares and none owns: it knows no app (`lint-imports`)."""
