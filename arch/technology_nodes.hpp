// The CMOS technology nodes npusim has an energy table for: the files of configs/energy (embedded
// in the binary). The hardware description checks its `technology_nm` against this list; the
// tables themselves are read and priced by power/ (power/energy_table.hpp).
#pragma once

#include <string>
#include <vector>

namespace npusim {

// The nodes with a table (from the embedded configs/energy files): 45, 28, 16, 7.
std::vector<int> technology_nodes();
bool is_technology_node(int nm);
std::string technology_nodes_joined();  // "7, 16, 28, 45"

}  // namespace npusim
