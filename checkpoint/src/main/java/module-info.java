/** The checkpointer, its recovery files and markers: internal, exported to the modules that drive it. */
// the modules named in qualified exports are built after this one, so javac cannot see them yet ("module");
// snappy-java ships no module name, so it is required by the name its jar file gives it ("requires-automatic")
@SuppressWarnings({"module", "requires-automatic"})
module dev.varve.checkpoint {
    requires dev.varve.core;
    requires org.slf4j;
    requires snappy.java;

    exports dev.varve.checkpoint to dev.varve.recovery, dev.varve.engine;
}
