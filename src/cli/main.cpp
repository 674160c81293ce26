#include <iostream>

#include "cli/command.h"

int main(int argc, char** argv) { return tlbsim::cli::run_cli(argc, argv, std::cout, std::cerr); }
