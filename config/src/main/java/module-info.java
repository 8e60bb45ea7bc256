/** A Varve store's settings, their limits and the snapshot retention policy: public API. */
module dev.varve.config {
    exports dev.varve.config;
}
