module spotbench/gobench

go 1.19
