# The chart of make bench: tokens on the wire per scenario, plain calls against one
# execute_code program (o200k_base), log scale. bench/run.sh passes data and out.
set terminal pngcairo size 960,540 font "sans,11"
set output out
set title "Tokens on the wire per task: plain tool calls against code mode (o200k\\_base)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y
set yrange [10:*]
set format y "10^{%L}"
set ylabel "tokens (log scale)"
set xlabel "scenario"
set xtics noenhanced
set key top right
set grid ytics
plot data using 2:xtic(1) title "plain (invoke\\_tool)" lc rgb "#c0504d", \
     '' using 3 title "code mode (execute\\_code)" lc rgb "#4f81bd", \
     '' using ($0 - 0.17):2:(sprintf("%d", $2)) with labels offset 0,0.7 font ",9" notitle, \
     '' using ($0 + 0.17):3:(sprintf("%d", $3)) with labels offset 0,0.7 font ",9" notitle
