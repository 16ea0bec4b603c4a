//! The seed document's admin CLI scripts (Oracle NoSQL, `001_22dd47f933f68d02.txt`), as
//! constants: the DDL parser's tests, the table tests, the CLI's tests and the end-to-end tests
//! all run them verbatim, and `storage/model/tests/ddl.rs` checks they match the document.

// The two scripts exactly as the seed document (001_22dd47f933f68d02.txt) holds them: one line
// each. The `\` line continuations are Rust syntax only; each string has no line break.
pub const SEED_SINGLE_KEY_SCRIPT: &str =
    "## Enter into table creation mode table create -name myProducts ## Now add the fields \
     add-field -type STRING -name productName add-field -type STRING -name productType \
     add-field -type ENUM -name color -enum-values blue,green,red add-field -type ENUM -name \
     size -enum-values small,medium,blue add-field -type INTEGER -name inventoryCount ## A \
     primary key must be defined for every table ## Here, we will define field 'productName' \
     as the primary key. primary-key -field productName ## Exit table creation mode exit ## \
     Add the table to the store. Use the -wait flag to ## force the script to wait for the \
     plan to complete ## before doing anything else. plan add-table -name myProducts -wait";

pub const SEED_THREE_KEY_SCRIPT: &str =
    "## Enter into table creation mode table create -name myProducts ## Now add the fields \
     add-field -type STRING -name productName add-field -type STRING -name productType \
     add-field -type STRING -name productClass add-field -type ENUM -name color -enum-values \
     blue,green,red add-field -type ENUM -name size -enum-values small,medium,large add-field \
     -type INTEGER -name inventoryCount ## A primary key must be defined for every table \
     primary-key -field productName -field productType -field productClass ## Exit table \
     creation mode exit ## Add the table to the store. Use the -wait flag to ## force the \
     script to wait for the plan to complete ## before doing anything else. plan add-table \
     -name myProducts -wait";

/// The same three-field-key script, one command per line, as an operator would write it.
pub const MULTI_LINE_SCRIPT: &str = "\
## Enter into table creation mode
table create -name myProducts
## Now add the fields
add-field -type STRING -name productName
add-field -type STRING -name productType
add-field -type STRING -name productClass
add-field -type ENUM -name color -enum-values blue,green,red
add-field -type ENUM -name size -enum-values small,medium,large
add-field -type INTEGER -name inventoryCount
## A primary key must be defined for every table; then exit table creation mode
primary-key -field productName -field productType -field productClass
## Exit table creation mode
exit
## Add the table to the store. Use the -wait flag to
## force the script to wait for the plan to complete
## before doing anything else.
plan add-table -name myProducts -wait
";
