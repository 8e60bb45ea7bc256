/** The split-snapshot archive. Internal, exported to the engine. */
// the modules named in qualified exports are built after this one, so javac cannot see them yet
@SuppressWarnings("module")
module dev.varve.snapshot {
    requires dev.varve.core;
    requires org.slf4j;

    exports dev.varve.snapshot to dev.varve.engine;
}
