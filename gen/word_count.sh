wc -w | tr -d ' '
