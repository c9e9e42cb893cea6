// The exact and ordered value domains: items are interned sets of runs, factored by element
// (domain_sets.cpp). Made through make_domain (domain.hpp).
#pragma once

#include <memory>

#include "exec/domain.hpp"

namespace collv {

std::unique_ptr<Domain> make_set_domain(DomainKind kind, std::uint32_t p, std::uint32_t elems);

}  // namespace collv
