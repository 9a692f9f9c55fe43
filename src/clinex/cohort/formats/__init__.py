"""n2c2 2018 Track 1 file formats: patient XML (:mod:`.n2c2_xml`), folders of dated notes
(:mod:`.notes_folder`) and the record rules both share (:mod:`.records`)."""
