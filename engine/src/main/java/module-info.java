/**
 * The Varve engine: the public API ({@code dev.varve.engine}, with {@code dev.varve.config} and the file-access SPI
 * of {@code dev.varve.core.io}) over the internal modules, which it alone reads.
 */
module dev.varve.engine {
    requires transitive dev.varve.config;
    requires transitive dev.varve.core;
    requires dev.varve.checkpoint;
    requires dev.varve.recovery;
    requires dev.varve.snapshot;
    requires java.management;
    requires org.slf4j;

    exports dev.varve.engine;
}
