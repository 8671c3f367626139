// Must NOT compile with -Werror: a Timer dropped at once would cancel its timer, so the
// wrapper marks Timer [[nodiscard]] (`make test-c` checks that this file is rejected).
#include "spot_timer.hpp"

using namespace std::chrono_literals;

void discard(spot::Owner &owner) {
    owner.register_timer(1, spot::TimerSpec::every(10ms)); // the warning this file expects
}
