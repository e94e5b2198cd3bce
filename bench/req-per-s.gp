# Grouped bars of req/s per case and target, from RESULTS/req-per-s.dat (written by
# bench/helper.py report) to RESULTS/req-per-s.png. From the repository root:
#   gnuplot -e "results='bench/results'" bench/req-per-s.gp
if (!exists("results")) results = "bench/results"
set terminal pngcairo size 1400,700 font "sans,11"
set output results."/req-per-s.png"
set title "Requests per second (median of the repetitions; log scale; higher is better)"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y 10
set yrange [1:*]
set format y "%.0s%c"
set ylabel "req/s"
set grid ytics
set key top right
set xtics rotate by -25 noenhanced
set bmargin 6
plot results."/req-per-s.dat" using 2:xtic(1) title "chartreg" linecolor rgb "#1b9e77", \
     "" using 3 title "nginx (static files)" linecolor rgb "#7570b3", \
     "" using 4 title "distribution" linecolor rgb "#d95f02", \
     "" using 5 title "actix-web, bare (control)" linecolor rgb "#999999"
