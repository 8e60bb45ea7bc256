/**
 * Pages, page memory, the B+tree and the WAL. Only the file-access SPI and the storage exceptions are public API (they
 * appear in the engine's signatures); every other package is exported to the modules built on it and no further.
 */
// the modules named in qualified exports are built after this one, so javac cannot see them yet
@SuppressWarnings("module")
module dev.varve.core {
    requires transitive dev.varve.config;
    requires java.management; // the JVM's direct memory: its limit and what is reserved (DirectMemory)
    requires org.slf4j;
    requires org.jctools.core;
    requires jdk.unsupported; // com.sun.nio.file.ExtendedOpenOption.DIRECT (looked up by name): uncached writes of shipped page images

    exports dev.varve.core.io;
    exports dev.varve.core.agent to dev.varve.checkpoint, dev.varve.snapshot, dev.varve.engine;
    exports dev.varve.core.memory to dev.varve.checkpoint, dev.varve.recovery, dev.varve.snapshot, dev.varve.engine;
    exports dev.varve.core.page to dev.varve.checkpoint, dev.varve.recovery, dev.varve.snapshot, dev.varve.engine;
    exports dev.varve.core.spi to dev.varve.checkpoint, dev.varve.recovery, dev.varve.snapshot, dev.varve.engine;
    exports dev.varve.core.store to dev.varve.checkpoint, dev.varve.recovery, dev.varve.snapshot, dev.varve.engine, dev.varve.server;
    exports dev.varve.core.tree to dev.varve.engine;
    exports dev.varve.core.util to dev.varve.checkpoint, dev.varve.snapshot, dev.varve.engine, dev.varve.cli;
    exports dev.varve.core.wal to dev.varve.checkpoint, dev.varve.recovery, dev.varve.engine;
}
