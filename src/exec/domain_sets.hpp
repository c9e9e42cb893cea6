// The exact and ordered value domains: items are interned sets of runs, factored by element
// (domain_sets.cpp). Made through make_domain (domain.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "exec/domain.hpp"

namespace collv {

// A contribution id's name: x3 (count 1) or x3.1 (node 3, element 1).
std::string term_name(std::uint32_t c, std::uint32_t elems);
// What describe() prints for the contributions v of an exact or ordered item (domain.cpp).
std::string describe_terms(std::span<const std::uint32_t> v, DomainKind kind, std::uint32_t elems);

std::unique_ptr<Domain> make_set_domain(DomainKind kind, std::uint32_t p, std::uint32_t elems);

// The other combines that made item a, besides d.operands(a): pairs (x, y) with a = combine(x,
// y), each distinct pair once, the first `max` of them written into `out` (cleared first);
// returns how many there are. The ring all-reduce makes its full sum at every node from a
// different pair, and operands() names the first. Kept by the domains make_set_domain makes
// (exact and ordered at count > 1), not for an item mixing elements; 0 for any other domain.
std::size_t other_operands(const Domain& d, Item a, std::vector<std::pair<Item, Item>>& out,
                           std::size_t max);

}  // namespace collv
