# The scale chart of make bench: milliseconds per request against the number of
# tools in the catalog, log-log (a straight line of slope 1 is linear growth).
# bench/run.sh passes data (bench/scale.mjs's BENCH_SCALE_DAT) and out.
set terminal pngcairo size 960,540 font "sans,11"
set output out
set title "Cost per request as the catalog grows"
set logscale xy
set xlabel "tools in the catalog"
set ylabel "milliseconds (median)"
set xtics (100, 1000, 4000, 10000)
set key top left
set grid
plot data using 1:2 with linespoints title "tools/list" lw 2, \
     '' using 1:3 with linespoints title "floor: yyjson writing that listing" dt 2, \
     '' using 1:4 with linespoints title "search\\_tools" lw 2, \
     '' using 1:5 with linespoints title "describe\\_tools (one server)", \
     '' using 1:6 with linespoints title "tools/call" lw 2
