// The exact and ordered value domains: items are interned sets of runs, factored by element
// (domain_sets.cpp). Made through make_domain (domain.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "exec/domain.hpp"

namespace collv {

// A contribution id's name: x3 (count 1) or x3.1 (node 3, element 1).
std::string term_name(std::uint32_t c, std::uint32_t elems);
// What describe() prints for the contributions v of an exact or ordered item (domain.cpp).
std::string describe_terms(std::span<const std::uint32_t> v, DomainKind kind, std::uint32_t elems);

std::unique_ptr<Domain> make_set_domain(DomainKind kind, std::uint32_t p, std::uint32_t elems);

}  // namespace collv
