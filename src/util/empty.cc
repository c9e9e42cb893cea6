// Keeps the collv_smt target non-empty before the solver layer has sources of its own.
