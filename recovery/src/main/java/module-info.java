/** Crash recovery: binary restore and logical replay. Internal, exported to the engine. */
// the modules named in qualified exports are built after this one, so javac cannot see them yet
@SuppressWarnings("module")
module dev.varve.recovery {
    requires dev.varve.core;
    requires dev.varve.checkpoint;
    requires org.slf4j;

    exports dev.varve.recovery to dev.varve.engine;
}
