# What `cmake --install` puts where, the build tree's stand-in for it, and the Debian package
# (`cpack`, see scripts/package). Included at the end of CMakeLists.txt. The layout under the
# prefix, which include/warren/paths.h finds from the binary's own location:
#   bin/warren, bin/warren-worker (what `warren worker` execs: the worker without libpq)
#   libexec/warren/handlers/     the executable handlers and the C handlers (*.so)
#   share/warren/schema/         the numbered migrations, functions/ (the definitions of functions,
#                                views and triggers) and superseded.sha256 (docs/schema.md)
#   etc/warren/warren.conf       (/etc/warren/warren.conf when the prefix is /usr)
#   include/warren/handler.h and share/pkgconfig/warren-handler.pc (component handler-dev)
#   share/doc/warren/            README.md and docs/ (openapi.json, the API's contract, among them)
#   lib/systemd/system/          warren-migrate.service, warren-executor.service, warren-worker@.service

# ---- the build tree ---------------------------------------------------------------------------
# build/warren finds build/handlers and build/schema through this marker (paths.c): the
# checkout's executable handlers are linked into build/handlers, where the C handlers are built,
# and build/schema is a link to the checkout's schema/. The links follow edits at once.
file(WRITE ${CMAKE_BINARY_DIR}/warren-build-tree
  "A warren build tree: ./warren uses ./handlers and ./schema (include/warren/paths.h).\n")
file(CREATE_LINK ${CMAKE_SOURCE_DIR}/schema ${CMAKE_BINARY_DIR}/schema SYMBOLIC)
file(GLOB WARREN_EXEC_HANDLERS LIST_DIRECTORIES false CONFIGURE_DEPENDS
  ${CMAKE_SOURCE_DIR}/handlers/*)
list(FILTER WARREN_EXEC_HANDLERS EXCLUDE REGEX "/(README[^/]*|[^/]*\\.c)$")
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/handlers)
file(GLOB WARREN_HANDLER_LINKS LIST_DIRECTORIES false ${CMAKE_BINARY_DIR}/handlers/*)
foreach(link ${WARREN_HANDLER_LINKS}) # links to handlers that are gone from the checkout
  if(IS_SYMLINK ${link})
    get_filename_component(name ${link} NAME)
    if(NOT EXISTS ${CMAKE_SOURCE_DIR}/handlers/${name})
      file(REMOVE ${link})
    endif()
  endif()
endforeach()
foreach(src ${WARREN_EXEC_HANDLERS})
  get_filename_component(name ${src} NAME)
  file(CREATE_LINK ${src} ${CMAKE_BINARY_DIR}/handlers/${name} SYMBOLIC)
endforeach()

# ---- cmake --install ----------------------------------------------------------------------------
install(TARGETS warren warren-worker RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# (the C handlers install from their loop in CMakeLists.txt, into the same directory)
install(PROGRAMS ${WARREN_EXEC_HANDLERS} DESTINATION ${WARREN_INSTALL_HANDLERSDIR})
install(DIRECTORY schema/ DESTINATION ${WARREN_INSTALL_SCHEMADIR})
# PREFIX/etc/warren, following `cmake --install --prefix`; but /etc/warren for the prefix /usr
# (GNUInstallDirs' rule) or an absolute CMAKE_INSTALL_SYSCONFDIR, where a relative destination
# would be wrong.
set(WARREN_CONF_DIR ${CMAKE_INSTALL_FULL_SYSCONFDIR}/warren)
if(CMAKE_INSTALL_FULL_SYSCONFDIR STREQUAL "${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_SYSCONFDIR}")
  install(FILES conf/warren.conf DESTINATION ${CMAKE_INSTALL_SYSCONFDIR}/warren)
else()
  install(FILES conf/warren.conf DESTINATION ${WARREN_CONF_DIR})
endif()
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The handler ABI for handlers built outside this tree (docs/handlers.md), component
# handler-dev: cc $(pkg-config --cflags warren-handler) -shared -fPIC -o my.so my.c
install(FILES include/warren/handler.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/warren
  COMPONENT handler-dev)
file(RELATIVE_PATH WARREN_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_DATADIR}/pkgconfig
  ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" WARREN_PC_TO_PREFIX "${WARREN_PC_TO_PREFIX}")
file(RELATIVE_PATH WARREN_PC_INCLUDEDIR ${CMAKE_INSTALL_PREFIX} ${CMAKE_INSTALL_FULL_INCLUDEDIR})
configure_file(include/warren-handler.pc.in ${CMAKE_BINARY_DIR}/warren-handler.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/warren-handler.pc DESTINATION ${CMAKE_INSTALL_DATADIR}/pkgconfig
  COMPONENT handler-dev)

# systemd units (systemd/*.in): the binary's and the config file's installed paths filled in.
# lib/systemd/system, not LIBDIR (lib/x86_64-linux-gnu): systemd reads /usr/lib/systemd/system
# and /usr/local/lib/systemd/system.
set(WARREN_BIN_PATH ${CMAKE_INSTALL_FULL_BINDIR}/warren)
set(WARREN_DOC_DIR ${CMAKE_INSTALL_FULL_DOCDIR})
set(WARREN_CONF_FILE ${WARREN_CONF_DIR}/warren.conf)
set(WARREN_ENV_FILE ${WARREN_CONF_DIR}/warren.env)
# The signing key the package's postinst makes: conf/warren.conf's message_queue.signing_key_file
# (absolute, the same for every prefix: tests/integration/deploy_package.sh compares the two).
set(WARREN_STATE_DIR /var/lib/warren)
set(WARREN_SIGNING_KEY_FILE ${WARREN_STATE_DIR}/signing.key)
file(GLOB WARREN_UNITS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/systemd/*.in)
foreach(unit_in ${WARREN_UNITS})
  get_filename_component(unit ${unit_in} NAME)
  string(REGEX REPLACE "\\.in$" "" unit ${unit})
  configure_file(${unit_in} ${CMAKE_BINARY_DIR}/systemd/${unit} @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/systemd/${unit} DESTINATION lib/systemd/system)
endforeach()

# ---- the Debian package (cpack; scripts/package configures with the prefix /usr) --------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME warren)
set(CPACK_PACKAGE_VENDOR "warren")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "worker runtime around RabbitMQ and PostgreSQL: executor, workers, handlers")
set(CPACK_PACKAGE_DESCRIPTION "An executor owns a PostgreSQL database of executions and \
dispatches them to workers through per-worker RabbitMQ queues with a TTL and a dead-letter \
exchange; workers run handlers and report results. Ships the warren binary, the example \
handlers, the schema migrations, /etc/warren/warren.conf and systemd units.")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # warren_VERSION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "warren maintainers <root@localhost>")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON) # dpkg-shlibdeps: librabbitmq4, libpq5, libjson-c5, ...
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser") # the postinst creates the warren system user
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "rabbitmq-server, postgresql")
foreach(script conffiles postinst prerm postrm)
  configure_file(${CMAKE_SOURCE_DIR}/packaging/debian/${script}.in
    ${CMAKE_BINARY_DIR}/packaging/debian/${script} @ONLY)
  list(APPEND CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/packaging/debian/${script})
endforeach()
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
